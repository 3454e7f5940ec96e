// Tokenizer names and construction (see tokenizer.h).
#include "data/tokenizer.h"

#include <fmt/core.h>

#include <filesystem>
#include <optional>

#include "data/byte_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/hf_tokenizer.h"
#include "data/tokenizer_config.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

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

std::string tokenizer_json_path(const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Anything else that exists is handed to the reader, which names what it is (a FIFO, a
  // device) rather than waiting on it.
  if (fs::is_directory(spec, ec)) {
    const std::string inside = (fs::path(spec) / "tokenizer.json").string();
    return fs::exists(inside, ec) ? inside : "";
  }
  return fs::exists(spec, ec) ? spec : "";
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec, const std::string& gpt2_dir,
                                          const std::string& where, const std::string& bos,
                                          const std::string& eos, const std::string& bos_where,
                                          const std::string& eos_where) {
  std::unique_ptr<Tokenizer> tok;
  DocumentMarkNames defaults;
  if (std::optional<TokenizerKind> kind = enum_from_name(kTokenizerKindNames, spec)) {
    tok = make_tokenizer(*kind, gpt2_dir);
  } else {
    const std::string json = tokenizer_json_path(spec);
    std::error_code ec;
    if (json.empty() && std::filesystem::is_directory(spec, ec))
      throw ConfigError(fmt::format("{}: the folder '{}' holds no tokenizer.json", where, excerpt(spec)));
    if (json.empty())
      throw ConfigError(fmt::format("{}: unknown tokenizer '{}': neither a name (valid: {}) nor a "
                                    "tokenizer.json file or a folder holding one", where,
                                    excerpt(spec), enum_choices(kTokenizerKindNames)));
    tok = std::make_unique<HfTokenizer>(load_hf_tokenizer_spec(json));
    defaults = default_document_marks(json);
    auto id_of = [&](const std::string& text, const char* what) {
      if (text.empty()) return int32_t{-1};
      const int32_t id = tok->token_id(text);
      if (id < 0)
        throw InputError(fmt::format("{}: the {} \"{}\" of tokenizer_config.json is not a token of {}",
                                     json, what, text, json));
      return id;
    };
    tok->set_document_marks(id_of(defaults.bos, "bos_token"), id_of(defaults.eos, "eos_token"));
  }
  tok->set_document_marks(resolve_document_mark(*tok, bos, tok->bos(), bos_where),
                          resolve_document_mark(*tok, eos, tok->eos(), eos_where));
  return tok;
}

}  // namespace trainer
