// The normalizers of a tokenizer.json (hf_tokenizer_spec.h), applied in order to a stretch of
// text between added tokens: NFC, NFKC (unicode_normalize.h), Replace (every occurrence of a
// literal, left to right, as JavaScript's replaceAll), Prepend.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/hf_tokenizer_spec.h"

namespace trainer {

std::string apply_normalizers(const std::vector<HfNormalizerStep>& steps, std::string_view text);

// Every occurrence of `from` (non-empty) in text replaced by `to`, left to right.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

}  // namespace trainer
