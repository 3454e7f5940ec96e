// Tokenizer names and construction (see tokenizer.h).
#include "data/tokenizer.h"

#include <fmt/core.h>

#include "data/byte_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "kernels/base/errors.h"

namespace trainer {

const char* tokenizer_kind_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::gpt2: return "gpt2";
    case TokenizerKind::byte: return "byte";
  }
  return "?";
}

TokenizerKind parse_tokenizer_kind(const std::string& name, const std::string& where) {
  for (TokenizerKind k : {TokenizerKind::gpt2, TokenizerKind::byte})
    if (name == tokenizer_kind_name(k)) return k;
  throw ConfigError(fmt::format("{}: unknown tokenizer '{}' (valid: gpt2, byte)", where, name));
}

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& dir) {
  switch (kind) {
    case TokenizerKind::gpt2: return std::make_unique<Gpt2Tokenizer>(load_gpt2_vocab(dir));
    case TokenizerKind::byte: return std::make_unique<ByteTokenizer>();
  }
  throw ConfigError("unknown tokenizer kind");
}

}  // namespace trainer
