// Byte-level tokenizer: id = byte value (0..255), end-of-text = 256, vocab_size 257. Needs no
// files; every byte string round-trips exactly.
#pragma once

#include "data/tokenizer.h"

namespace trainer {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kEot = 256;
  ByteTokenizer();
  std::vector<int32_t> encode(std::string_view text) const override;
  // kEot decodes to "<|endoftext|>" (as GPT-2's does); other ids outside 0..256 are an
  // InputError naming the id.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t eot() const override { return kEot; }
  int32_t token_id(std::string_view token) const override;
  int32_t vocab_size() const override { return kEot + 1; }
};

}  // namespace trainer
