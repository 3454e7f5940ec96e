// GPT-2 BPE tokenizer (see gpt2_tokenizer.h).
#include "data/gpt2_tokenizer.h"

#include <fmt/core.h>

#include "data/gpt2_pretokenize.h"
#include "kernels/base/errors.h"

namespace trainer {

Gpt2Tokenizer::Gpt2Tokenizer(Gpt2Vocab vocab) : vocab_(std::move(vocab)) {
  set_document_marks(vocab_.eot, -1);  // llm.c: every document starts with end-of-text
}

int32_t Gpt2Tokenizer::token_id(std::string_view token) const {
  for (size_t i = 0; i < vocab_.token_bytes.size(); ++i)
    if (vocab_.token_bytes[i] == token) return static_cast<int32_t>(i);
  return -1;
}

void Gpt2Tokenizer::encode_piece(std::string_view piece, std::vector<int32_t>* out) const {
  auto it = cache_.find(piece);
  if (it != cache_.end()) {
    const int32_t* ids = cache_ids_.data() + it->second.offset;
    out->insert(out->end(), ids, ids + it->second.length);
    return;
  }
  symbols_.clear();
  for (char c : piece) symbols_.push_back(vocab_.byte_token[static_cast<unsigned char>(c)]);
  bpe_merge(vocab_.merges, &symbols_, &scratch_);
  out->insert(out->end(), symbols_.begin(), symbols_.end());
  if (piece.size() > kMaxCachedPieceBytes) return;
  if (cache_.size() >= kMaxCacheEntries) {
    cache_.clear();
    cache_keys_.clear();
    cache_ids_.clear();
  }
  cache_keys_.emplace_back(piece);
  const Span span{static_cast<uint32_t>(cache_ids_.size()), static_cast<uint32_t>(symbols_.size())};
  cache_ids_.insert(cache_ids_.end(), symbols_.begin(), symbols_.end());
  cache_.emplace(std::string_view(cache_keys_.back()), span);
}

std::vector<int32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 16);
  pieces_.clear();
  gpt2_pretokenize(text, &pieces_);
  for (std::string_view piece : pieces_) encode_piece(piece, &ids);
  return ids;
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw InputError(fmt::format("token id {} is outside the GPT-2 vocabulary [0, {})", id,
                                   vocab_size()));
    out += vocab_.token_bytes[static_cast<size_t>(id)];
  }
  return out;
}

}  // namespace trainer
