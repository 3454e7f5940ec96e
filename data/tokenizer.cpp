// Tokenizer names and construction (see tokenizer.h).
#include "data/tokenizer.h"

#include <fmt/core.h>

#include <optional>

#include "data/byte_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "kernels/base/errors.h"

namespace trainer {

TokenizerKind parse_tokenizer_kind(const std::string& name, const std::string& where) {
  if (std::optional<TokenizerKind> kind = enum_from_name(kTokenizerKindNames, name)) return *kind;
  throw ConfigError(fmt::format("{}: unknown tokenizer '{}' (valid: {})", where, name,
                                enum_choices(kTokenizerKindNames)));
}

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& dir) {
  switch (kind) {
    case TokenizerKind::gpt2: return std::make_unique<Gpt2Tokenizer>(load_gpt2_vocab(dir));
    case TokenizerKind::byte: return std::make_unique<ByteTokenizer>();
  }
  throw ConfigError("unknown tokenizer kind");
}

}  // namespace trainer
