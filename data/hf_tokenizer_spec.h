// What a Hugging Face tokenizer.json asks for, read into plain data (hf_tokenizer_json.cpp)
// and run by HfTokenizer (hf_tokenizer.h). Only components trainer implements exactly can be
// represented here: the loader refuses every other component, option or value with a
// ConfigError naming the file, the JSON path, the value and what is implemented.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/split_regex.h"

namespace trainer {

struct HfNormalizerStep {
  enum Kind : uint8_t { nfc, nfkc, replace, prepend } kind = nfc;
  std::string pattern;  // replace: the literal String pattern
  std::string content;  // replace: its replacement; prepend: the prefix
};

struct HfPreTokenizerStep {
  enum Kind : uint8_t { split, byte_level, metaspace } kind = split;
  std::shared_ptr<const SplitRegex> regex;  // split (behavior Isolated)
  bool add_prefix_space = false;            // byte_level
  bool use_regex = true;                    // byte_level: GPT-2's pattern
  std::string replacement;                  // metaspace: usually "▁"
  enum Prepend : uint8_t { always, first, never } prepend_scheme = always;  // metaspace
};

struct HfDecoderStep {
  enum Kind : uint8_t { byte_level, replace, byte_fallback, fuse, strip, metaspace } kind = fuse;
  std::string pattern, content;  // replace (literal String); strip: content; metaspace: pattern
  int start = 0, stop = 0;       // strip
};

struct HfAddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
};

struct HfBpeModel {
  std::vector<std::pair<std::string, int32_t>> vocab;  // token string (as in the file) -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::string unk_token;  // "" = none
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

struct HfTokenizerSpec {
  std::string path;  // tokenizer.json, for messages
  std::vector<HfNormalizerStep> normalizers;     // applied in order
  std::vector<HfPreTokenizerStep> pre_tokenizers;  // applied in order
  std::vector<HfDecoderStep> decoders;
  std::vector<HfAddedToken> added_tokens;
  HfBpeModel model;
  bool byte_level = false;  // a ByteLevel pre-tokenizer: the model's alphabet is GPT-2's bytes
};

// Reads and checks path (a tokenizer.json). Unreadable or malformed JSON is an InputError;
// a component, option or value that trainer does not implement is a ConfigError.
HfTokenizerSpec load_hf_tokenizer_spec(const std::string& path);
// The same from the file's text in memory; path only names it in messages.
HfTokenizerSpec parse_hf_tokenizer_spec(std::string_view text, const std::string& path);

}  // namespace trainer
