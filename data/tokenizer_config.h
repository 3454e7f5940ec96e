// BOS/EOS per document for a tokenizer.json, from the tokenizer_config.json beside it (when
// there is one), and the recipe's / command line's overrides of them.
//
// Defaults (the file's own flags where it has them, else what its pretraining would use):
//   BOS = bos_token when add_bos_token is true, or when add_bos_token is absent and bos_token
//         is set (Llama 3's config names a BOS but no flag);
//   EOS = eos_token when add_eos_token is true, or when no BOS is added and eos_token is set
//         (every document needs a boundary: Qwen's configs have no BOS).
// A token given as a string or as an object with "content" (both forms occur).
// Overrides: "auto" keeps the default, "none" adds nothing, anything else is the text of a
// token ("<|endoftext|>") that must exist. A document without any boundary (BOS and EOS both
// none) is refused by `data prepare`, not here.
#pragma once

#include <cstdint>
#include <string>

#include "data/tokenizer.h"

namespace trainer {

struct DocumentMarkNames {
  std::string bos, eos;  // token texts, "" = none
};

// Defaults for the tokenizer.json at json_path: reads tokenizer_config.json in its folder
// if present (malformed JSON is an InputError naming it); none when it is absent. The config's
// remove_space / do_lowercase_and_remove_accent true (text rewrites before encoding in the
// reference) are a ConfigError: not implemented.
DocumentMarkNames default_document_marks(const std::string& json_path);

// Resolves an override ("auto", "none", or a token's text) against the tokenizer; `what`
// names the option in errors (e.g. "--bos" or "recipe.yaml:7:3: data.bos").
int32_t resolve_document_mark(const Tokenizer& tok, const std::string& value, int32_t fallback,
                              const std::string& what);

}  // namespace trainer
