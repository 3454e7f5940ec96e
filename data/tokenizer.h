// Tokenizers: byte-level (256 byte ids + end-of-text, no files), GPT-2 BPE from
// encoder.json + vocab.bpe, encoding exactly as OpenAI's reference encoder does, and Hugging
// Face tokenizer.json files (hf_tokenizer.h), exactly as Hugging Face's own implementation.
// For gpt2 and byte, text is plain text: "<|endoftext|>" inside it is ordinary characters; a
// tokenizer.json matches its added tokens in the text, as its reference does. Document
// boundaries are inserted by callers (bos(), eos()).
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
  // Id of a token given by its text ("<|endoftext|>", "<s>"), or -1 when there is none.
  virtual int32_t token_id(std::string_view token) const = 0;

  // The ids `data prepare` puts before and after every document (-1 = none). Defaults:
  // gpt2 and byte start each document with end-of-text (llm.c's convention); a
  // tokenizer.json takes them from tokenizer_config.json (tokenizer_config.h).
  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  void set_document_marks(int32_t bos, int32_t eos) {
    bos_ = bos;
    eos_ = eos;
  }

 protected:
  int32_t bos_ = -1, eos_ = -1;
};

// Unknown names are a ConfigError that starts with `where` (e.g. "recipe.yaml:12:14:
// data.tokenizer") and lists the valid names.
TokenizerKind parse_tokenizer_kind(const std::string& name, const std::string& where);

// Where scripts/fetch_data.sh puts encoder.json and vocab.bpe (relative to the repository).
constexpr const char* kDefaultTokenizerDir = "datasets/tokenizer";

// dir holds encoder.json and vocab.bpe for gpt2; unused for byte. Missing or bad files are an
// InputError naming the file.
std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& dir);

// What data.tokenizer and --tokenizer accept: gpt2, byte, or the path of a tokenizer.json
// (or of a folder holding one).
// The tokenizer.json a path names (the path itself, or its folder's tokenizer.json), or "" when
// nothing is there.
std::string tokenizer_json_path(const std::string& spec);
// Builds the tokenizer `spec` names (an unknown name or missing path is a ConfigError that
// starts with `where` and lists what is valid), then applies the BOS/EOS overrides ("auto",
// "none" or a token's text, see tokenizer_config.h); bos_where/eos_where name those options.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec, const std::string& gpt2_dir,
                                          const std::string& where = "--tokenizer",
                                          const std::string& bos = "auto",
                                          const std::string& eos = "auto",
                                          const std::string& bos_where = "--bos",
                                          const std::string& eos_where = "--eos");

}  // namespace trainer
