// Tokenizers: byte-level (256 byte ids + end-of-text, no files) and GPT-2 BPE from
// encoder.json + vocab.bpe, encoding exactly as OpenAI's reference encoder does.
// Text is plain text: "<|endoftext|>" inside it is ordinary characters; document boundaries
// are inserted by callers as eot().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class TokenizerKind : uint8_t { gpt2, byte };
// Names used in recipes (data.tokenizer) and on the command line (--tokenizer).
inline constexpr EnumName<TokenizerKind> kTokenizerKindNames[] = {{TokenizerKind::gpt2, "gpt2"},
                                                                  {TokenizerKind::byte, "byte"}};
inline const char* tokenizer_kind_name(TokenizerKind kind) {
  return enum_name(kTokenizerKindNames, kind);
}

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Bytes of the ids concatenated. Ids whose bytes are not valid UTF-8 on their own come out
  // as raw bytes (callers printing partial output may see broken characters).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int32_t eot() const = 0;
  virtual int32_t vocab_size() const = 0;
};

// Unknown names are a ConfigError that starts with `where` (e.g. "recipe.yaml:12:14:
// data.tokenizer") and lists the valid names.
TokenizerKind parse_tokenizer_kind(const std::string& name, const std::string& where);

// Where scripts/fetch_data.sh puts encoder.json and vocab.bpe (relative to the repository).
constexpr const char* kDefaultTokenizerDir = "datasets/tokenizer";

// dir holds encoder.json and vocab.bpe for gpt2; unused for byte. Missing or bad files are an
// InputError naming the file.
std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& dir);

}  // namespace trainer
