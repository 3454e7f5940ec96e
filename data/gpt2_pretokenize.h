// GPT-2 pre-tokenisation: splits text into the pieces that BPE then encodes one by one.
// Hand-written equivalent of the reference pattern (OpenAI encoder.py, npm gpt-3-encoder)
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with JavaScript's classes (see unicode_classes.h). Bytes that are not valid UTF-8 count as
// "other" characters, one byte each, so any byte string splits into pieces that concatenate
// back to it exactly.
#pragma once

#include <string_view>
#include <vector>

namespace trainer {

// Appends the pieces of text, in order, to *pieces (views into text).
void gpt2_pretokenize(std::string_view text, std::vector<std::string_view>* pieces);

}  // namespace trainer
