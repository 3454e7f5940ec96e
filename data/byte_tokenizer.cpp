// Byte-level tokenizer (see byte_tokenizer.h).
#include "data/byte_tokenizer.h"

#include <fmt/core.h>

#include "kernels/base/errors.h"

namespace trainer {

ByteTokenizer::ByteTokenizer() { set_document_marks(kEot, -1); }

int32_t ByteTokenizer::token_id(std::string_view token) const {
  if (token == "<|endoftext|>") return kEot;
  return token.size() == 1 ? static_cast<unsigned char>(token[0]) : -1;
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int32_t id : ids) {
    if (id == kEot) {
      out += "<|endoftext|>";
    } else if (id >= 0 && id < 256) {
      out.push_back(static_cast<char>(id));
    } else {
      throw InputError(fmt::format("token id {} is outside the byte vocabulary [0, {})", id,
                                   vocab_size()));
    }
  }
  return out;
}

}  // namespace trainer
