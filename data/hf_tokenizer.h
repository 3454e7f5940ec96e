// A Hugging Face tokenizer.json run natively: added tokens matched first (leftmost-longest,
// on the raw text), then per stretch between them the normalizers, the pre-tokenizers and
// the BPE model, as Hugging Face's JavaScript tokenizers encode with add_special_tokens
// false (BOS/EOS are added per document by the caller, from tokenizer_config.json; the
// file's post_processor is not applied). encode() and decode() are const and safe to call
// from many threads at once; the only state kept between calls is a cache of the BPE results
// of pieces outside the vocabulary (as both reference implementations keep), in shards behind
// mutexes. It saves work and never changes a result.
// Text that is not valid UTF-8 still encodes: each bad byte is a character of its own that
// no class or literal matches (the reference would see U+FFFD there), and byte-level models
// encode its byte; decode() gives raw bytes, never replacement characters.
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/bpe.h"
#include "data/flat_string_map.h"
#include "data/hf_tokenizer_spec.h"
#include "data/tokenizer.h"

namespace trainer {

class HfTokenizer final : public Tokenizer {
 public:
  // Checks that every merge's halves and result and every special id are in the vocabulary
  // (InputError naming the file and the entry).
  explicit HfTokenizer(HfTokenizerSpec spec);
  // Its maps point into its own tables: neither copied nor moved.
  HfTokenizer(const HfTokenizer&) = delete;
  HfTokenizer& operator=(const HfTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text) const override;
  // Ids outside the vocabulary are an InputError naming the id.
  std::string decode(const std::vector<int32_t>& ids) const override;
  // The document start: BOS when there is one, else EOS.
  int32_t eot() const override { return bos() >= 0 ? bos() : eos(); }
  int32_t vocab_size() const override { return vocab_size_; }
  int32_t token_id(std::string_view token) const override;

 private:
  struct Trie {  // added tokens by their bytes
    std::unordered_map<uint64_t, int32_t> edges;  // (node << 8 | byte) -> node
    std::vector<int32_t> token;                  // node -> added token id, or -1
    std::array<bool, 256> first{};               // bytes that start some token
  };
  struct Scratch {
    std::vector<std::string_view> pieces, next;
    std::deque<std::string> owned;  // texts that pieces point into (stable addresses)
    std::vector<int32_t> symbols;
    BpeScratch bpe;
  };
  void encode_section(std::string_view text, size_t section_index, Scratch* s,
                      std::vector<int32_t>* ids) const;
  void encode_piece(std::string_view piece, Scratch* s, std::vector<int32_t>* ids,
                    size_t subsection_start) const;
  void encode_word(std::string_view word, Scratch* s, std::vector<int32_t>* ids,
                   size_t subsection_start) const;
  void bpe_word(std::string_view word, Scratch* s, std::vector<int32_t>* ids) const;
  std::string_view own(std::string text, Scratch* s) const;

  // Pieces of at most kMaxCachedPiece bytes; a shard is emptied when it holds kShardEntries.
  static constexpr size_t kCacheShards = 16, kShardEntries = 1 << 14, kMaxCachedPiece = 64;
  struct CacheShard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>> ids;
  };
  bool cached(std::string_view piece, std::vector<int32_t>* ids) const;
  void remember(std::string_view piece, const int32_t* ids, size_t count) const;

  HfTokenizerSpec spec_;
  std::vector<std::string> id_to_token_;  // raw bytes for byte-level models; "" = no token
  std::vector<bool> has_id_;
  FlatStringMap token_to_id_;  // model vocabulary (keys point into id_to_token_)
  std::unordered_map<std::string_view, int32_t> added_;  // added token content -> id
  std::array<int32_t, 256> byte_token_{};  // byte-level: byte -> id; else byte_fallback <0xNN>
  Trie trie_;
  MergeTable merges_;
  int32_t unk_ = -1, vocab_size_ = 0;
  // SentencePiece-style files whose merges never join a symbol to a following U+2581: a piece
  // (a whole stretch of text there, with no pre-tokenizer) is encoded word by word.
  bool split_at_metaspace_ = false;
  mutable std::array<CacheShard, kCacheShards> cache_;
};

}  // namespace trainer
