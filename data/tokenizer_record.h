// The record `data prepare` leaves beside its shards (OUT/tokenizer.record): which tokenizer
// made them, so that training on them with another one (Llama 3 shards read with data.tokenizer
// gpt2: every id below 50257 passes, the model learns nonsense and exports the wrong tokenizer)
// is refused instead of running silently. A tokenizer is identified by a fingerprint of its
// files (gpt2: encoder.json and vocab.bpe; a tokenizer.json: the file), not by its path, so a
// moved folder still matches; the byte tokenizer has no files and is "byte".
// The record is part of the published set (folder_publication.h): it changes with the shards.
// Shards without one (llm.c's scripts, older runs) are not refused; training notes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainer {

inline constexpr const char* kTokenizerRecordName = "tokenizer.record";

struct TokenizerRecord {
  std::string tokenizer;    // as data prepare was given it (gpt2, byte, a path)
  std::string fingerprint;  // 16 hex digits of FNV-1a 64 over the tokenizer's files, or "byte"
  int32_t vocab_size = 0;
};

// The record of the tokenizer `spec` names (gpt2_dir holds gpt2's files). InputError naming a
// file that cannot be read.
TokenizerRecord tokenizer_record(const std::string& spec, const std::string& gpt2_dir, int32_t vocab_size);

std::string tokenizer_record_text(const TokenizerRecord& r);
void write_tokenizer_record(const std::string& path, const TokenizerRecord& r);
// The record in `dir`, or nullopt when there is none; InputError naming the file when it does
// not parse.
std::optional<TokenizerRecord> read_tokenizer_record(const std::string& dir);

// Whether two records name the same tokenizer (fingerprint and vocabulary, not the path).
bool same_tokenizer(const TokenizerRecord& a, const TokenizerRecord& b);

}  // namespace trainer
