// GPT-2 BPE tokenizer: pre-tokenisation (gpt2_pretokenize.h), then byte-level BPE per piece
// (bpe.h) with a cache of piece -> ids, as the reference encoder keeps one.
// encode() is safe to call from several threads (the cache is behind a mutex, held for the
// whole call). The cache only saves work: it never changes a result, and it is emptied when
// it grows past kMaxCacheEntries.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/gpt2_vocab.h"
#include "data/tokenizer.h"

namespace trainer {

class Gpt2Tokenizer final : public Tokenizer {
 public:
  static constexpr size_t kMaxCacheEntries = size_t{1} << 18;
  static constexpr size_t kMaxCachedPieceBytes = 256;  // longer pieces are rare: not cached

  explicit Gpt2Tokenizer(Gpt2Vocab vocab);
  std::vector<int32_t> encode(std::string_view text) const override;
  // Ids outside [0, vocab_size) are an InputError naming the id.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t eot() const override { return vocab_.eot; }
  int32_t token_id(std::string_view token) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.token_bytes.size()); }

 private:
  struct Span {
    uint32_t offset, length;  // into cache_ids_
  };
  void encode_piece(std::string_view piece, std::vector<int32_t>* out) const;

  Gpt2Vocab vocab_;
  mutable std::mutex mutex_;
  mutable std::deque<std::string> cache_keys_;  // stable storage for the map's keys
  mutable std::unordered_map<std::string_view, Span> cache_;
  mutable std::vector<int32_t> cache_ids_;
  mutable std::vector<std::string_view> pieces_;
  mutable std::vector<int32_t> symbols_;
  mutable BpeScratch scratch_;
};

}  // namespace trainer
