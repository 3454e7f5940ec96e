// Hugging Face tokenizer.json, encoding (see hf_tokenizer.h). Decoding: hf_decode.cpp.
#include "data/hf_tokenizer.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>

#include "data/gpt2_pretokenize.h"
#include "data/gpt2_vocab.h"
#include "data/hf_normalize.h"
#include "data/unicode_classes.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {
namespace {

// A byte-level vocabulary entry (GPT-2's printable stand-ins) as raw bytes; false when some
// character is not one of the 256 stand-ins (such an entry cannot come out of the model).
bool byte_level_to_bytes(const std::string& token, const std::vector<int16_t>& byte_of,
                         std::string* out) {
  out->clear();
  for (size_t i = 0; i < token.size();) {
    uint32_t cp = 0;
    i += static_cast<size_t>(utf8_next(token.data() + i, token.data() + token.size(), &cp));
    if (cp >= byte_of.size() || byte_of[cp] < 0) return false;
    out->push_back(static_cast<char>(byte_of[cp]));
  }
  return true;
}

}  // namespace

HfTokenizer::HfTokenizer(HfTokenizerSpec spec) : spec_(std::move(spec)) {
  const std::string& file = spec_.path;
  int32_t max_id = -1;
  for (const auto& [token, id] : spec_.model.vocab) max_id = std::max(max_id, id);
  for (const HfAddedToken& t : spec_.added_tokens) max_id = std::max(max_id, t.id);
  if (max_id < 0) throw InputError(fmt::format("{}: the vocabulary is empty", file));
  vocab_size_ = max_id + 1;
  id_to_token_.assign(static_cast<size_t>(vocab_size_), std::string());
  has_id_.assign(static_cast<size_t>(vocab_size_), false);
  std::vector<bool> in_model(static_cast<size_t>(vocab_size_), false);

  std::vector<int16_t> byte_of(324, -1);  // stand-in code point -> byte
  const std::array<uint32_t, 256> stand_in = gpt2_byte_to_codepoint();
  for (int b = 0; b < 256; ++b) byte_of[stand_in[static_cast<size_t>(b)]] = static_cast<int16_t>(b);
  std::string raw;
  for (const auto& [token, id] : spec_.model.vocab) {
    const size_t i = static_cast<size_t>(id);
    if (has_id_[i]) {
      std::string first;
      for (const auto& [other, other_id] : spec_.model.vocab)
        if (other_id == id) {
          first = other;
          break;
        }
      throw InputError(fmt::format("{}: model.vocab: the id {} belongs to two tokens, \"{}\" and \"{}\"; valid: one "
                                   "id per token",
                                   file, id, excerpt(first), excerpt(token)));
    }
    has_id_[i] = true;
    in_model[i] = true;
    if (spec_.byte_level && !byte_level_to_bytes(token, byte_of, &raw)) {
      id_to_token_[i] = token;  // unreachable by encoding; decodes as written
      in_model[i] = false;
      continue;
    }
    id_to_token_[i] = spec_.byte_level ? raw : token;
  }
  for (size_t i = 0; i < id_to_token_.size(); ++i)
    if (in_model[i]) token_to_id_.insert(id_to_token_[i], static_cast<int32_t>(i));

  // Added tokens: their content replaces the model's entry of the same id (as the reference's
  // vocab table does), and the trie finds them in raw text.
  // A model token displaced that way (its id, other content) -> the added token's index, so
  // that a merge or byte needing it names the added token rather than a missing entry.
  std::unordered_map<std::string, size_t> displaced;
  std::unordered_map<int32_t, size_t> added_at;  // id -> first added token with it
  trie_.token.push_back(-1);
  for (size_t k = 0; k < spec_.added_tokens.size(); ++k) {
    const HfAddedToken& t = spec_.added_tokens[k];
    const size_t i = static_cast<size_t>(t.id);
    if (const auto [it, fresh] = added_at.emplace(t.id, k); !fresh && spec_.added_tokens[it->second].content != t.content)
      throw InputError(fmt::format("{}: added_tokens[{}] \"{}\" has the id {} of added_tokens[{}] \"{}\"; valid: one "
                                   "id per added token",
                                   file, k, excerpt(t.content), t.id, it->second,
                                   excerpt(spec_.added_tokens[it->second].content)));
    if (id_to_token_[i] == t.content) {
      has_id_[i] = true;
      continue;
    }
    if (in_model[i]) {  // the keys of token_to_id_ point into id_to_token_: drop it first
      displaced.emplace(id_to_token_[i], k);
      token_to_id_.erase(id_to_token_[i]);
      in_model[i] = false;
    }
    id_to_token_[i] = t.content;
    has_id_[i] = true;
  }
  // The reference looks every string up in its added tokens first: a model token spelled like
  // an added token (of another id) stands for the added token. Byte-level strings equal the
  // raw text only where every byte is printable ASCII (GPT-2's stand-in is the byte itself).
  for (const HfAddedToken& t : spec_.added_tokens) {
    const bool same_spelling = !spec_.byte_level ||
        std::all_of(t.content.begin(), t.content.end(), [](char c) { return c >= 0x21 && c <= 0x7E; });
    if (same_spelling && token_to_id_.find(t.content) >= 0) token_to_id_.insert(t.content, t.id);
  }
  for (const HfAddedToken& t : spec_.added_tokens) {
    added_[id_to_token_[static_cast<size_t>(t.id)]] = t.id;
    int32_t node = 0;
    for (char c : t.content) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(c);
      auto it = trie_.edges.find(key);
      if (it == trie_.edges.end()) {
        trie_.token.push_back(-1);
        it = trie_.edges.emplace(key, static_cast<int32_t>(trie_.token.size() - 1)).first;
      }
      node = it->second;
    }
    trie_.token[static_cast<size_t>(node)] = t.id;  // a later duplicate wins, as in a Map
    trie_.first[static_cast<unsigned char>(t.content[0])] = true;
  }

  // The error for a model token (`key`, as stored) that `what` needs and the vocabulary lacks.
  auto lacking = [&](const std::string& key, const std::string& token, const std::string& what) {
    const auto it = displaced.find(key);
    if (it == displaced.end())
      return InputError(fmt::format("{}: {} \"{}\" is not in model.vocab", file, what, excerpt(token)));
    const HfAddedToken& t = spec_.added_tokens[it->second];
    return InputError(fmt::format("{}: {} needs \"{}\", id {} in model.vocab, but added_tokens[{}] \"{}\" takes that id "
                                  "with other content; valid: an added token with an id of its own, or the vocab's "
                                  "content",
                                  file, what, excerpt(token), t.id, it->second, excerpt(t.content)));
  };
  auto id_of = [&](const std::string& token, const std::string& what) {
    std::string key = token;
    if (spec_.byte_level && !byte_level_to_bytes(token, byte_of, &key))
      throw InputError(fmt::format("{}: {} \"{}\" is not written in byte-level characters", file, what,
                                   excerpt(token)));
    const int32_t id = token_to_id_.find(key);
    if (id < 0) throw lacking(key, token, what);
    return id;
  };
  if (!spec_.model.unk_token.empty()) {
    auto it = added_.find(spec_.model.unk_token);
    unk_ = it != added_.end() ? it->second : id_of(spec_.model.unk_token, "model.unk_token");
  }
  byte_token_.fill(-1);
  for (int b = 0; b < 256; ++b) {
    if (spec_.byte_level) {
      const char c = static_cast<char>(b);
      const int32_t id = token_to_id_.find(std::string_view(&c, 1));
      if (id < 0) {
        std::string token;  // as the file spells it (GPT-2's stand-in character)
        append_utf8(stand_in[static_cast<size_t>(b)], &token);
        if (displaced.count(std::string(1, c)))
          throw lacking(std::string(1, c), token, fmt::format("the byte 0x{:02X}", b));
        throw InputError(fmt::format("{}: model.vocab has no token for the byte 0x{:02X} (a "
                                     "byte-level vocabulary needs all 256)", file, b));
      }
      byte_token_[static_cast<size_t>(b)] = id;
    } else if (spec_.model.byte_fallback) {
      byte_token_[static_cast<size_t>(b)] = token_to_id_.find(fmt::format("<0x{:02X}>", b));
    }
  }
  for (size_t r = 0; r < spec_.model.merges.size(); ++r) {
    const auto& [left, right] = spec_.model.merges[r];
    const std::string what = fmt::format("model.merges[{}]", r);
    const int32_t l = id_of(left, what), rt = id_of(right, what);
    const int32_t merged = id_of(left + right, what + " (the merged token)");
    merges_.add(l, rt, MergeRule{static_cast<int32_t>(r), merged});
  }
  split_at_metaspace_ = !spec_.byte_level;
  for (const auto& [left, right] : spec_.model.merges) {
    const bool left_ends_meta = left.size() >= 3 && left.compare(left.size() - 3, 3, "\xE2\x96\x81") == 0;
    if (!left_ends_meta && right.compare(0, 3, "\xE2\x96\x81") == 0) split_at_metaspace_ = false;
  }
  for (const HfDecoderStep& d : spec_.decoders)
    if (d.kind == HfDecoderStep::byte_level && !spec_.byte_level)
      throw ConfigError(fmt::format("{}: decoder: a ByteLevel decoder without a ByteLevel "
                                    "pre-tokenizer is not implemented", file));
}

int32_t HfTokenizer::token_id(std::string_view token) const {
  if (auto it = added_.find(token); it != added_.end()) return it->second;
  return token_to_id_.find(token);
}

std::string_view HfTokenizer::own(std::string text, Scratch* s) const {
  s->owned.push_back(std::move(text));
  return s->owned.back();
}

void HfTokenizer::encode_piece(std::string_view piece, Scratch* s, std::vector<int32_t>* ids,
                               size_t subsection_start) const {
  if (piece.empty()) return;
  if (spec_.model.ignore_merges) {
    if (const int32_t id = token_to_id_.find(piece); id >= 0) {
      ids->push_back(id);
      return;
    }
  }
  if (!split_at_metaspace_) {
    encode_word(piece, s, ids, subsection_start);
    return;
  }
  // No merge joins a symbol ending in another character to one starting with U+2581, so BPE
  // of the whole piece equals BPE of its words (cut before each such U+2581), word by word.
  static constexpr std::string_view kMeta = "\xE2\x96\x81";
  size_t start = 0;
  for (size_t i = piece.find(kMeta, 1); i != std::string_view::npos; i = piece.find(kMeta, i + 3)) {
    if (i >= 3 && piece.compare(i - 3, 3, kMeta) == 0) continue;  // inside a run of U+2581
    encode_word(piece.substr(start, i - start), s, ids, subsection_start);
    start = i;
  }
  encode_word(piece.substr(start), s, ids, subsection_start);
}

void HfTokenizer::encode_word(std::string_view word, Scratch* s, std::vector<int32_t>* ids,
                              size_t subsection_start) const {
  const size_t first_id = ids->size();
  if (word.size() > kMaxCachedPiece || !cached(word, ids)) {
    bpe_word(word, s, ids);
    if (word.size() <= kMaxCachedPiece) remember(word, ids->data() + first_id, ids->size() - first_id);
  }
  // fuse_unk: the reference fuses runs of unknowns over the whole stretch of text, so an unk
  // that starts this word joins one that ended the word before.
  if (spec_.model.fuse_unk && ids->size() > first_id && first_id > subsection_start &&
      (*ids)[first_id] == unk_ && (*ids)[first_id - 1] == unk_)
    ids->erase(ids->begin() + static_cast<std::ptrdiff_t>(first_id));
}

void HfTokenizer::bpe_word(std::string_view word, Scratch* s, std::vector<int32_t>* ids) const {
  const size_t first_id = ids->size();
  std::vector<int32_t>& sym = s->symbols;
  sym.clear();
  if (spec_.byte_level) {
    for (char c : word) sym.push_back(byte_token_[static_cast<unsigned char>(c)]);
  } else {
    for (size_t i = 0; i < word.size();) {
      uint32_t cp = 0;
      const int len = utf8_next(word.data() + i, word.data() + word.size(), &cp);
      const int32_t id = cp == kInvalidCodepoint ? -1 : token_to_id_.find(word.substr(i, static_cast<size_t>(len)));
      // Unknown characters never merge; -1 - offset remembers where their bytes are.
      sym.push_back(id >= 0 ? id : -1 - static_cast<int32_t>(i));
      i += static_cast<size_t>(len);
    }
  }
  bpe_merge(merges_, &sym, &s->bpe);
  for (const int32_t id : sym) {
    if (id >= 0) {
      ids->push_back(id);
      continue;
    }
    const size_t at = static_cast<size_t>(-1 - id);
    uint32_t cp = 0;
    const int len = utf8_next(word.data() + at, word.data() + word.size(), &cp);
    bool all_bytes = spec_.model.byte_fallback;
    for (int k = 0; all_bytes && k < len; ++k)
      all_bytes = byte_token_[static_cast<unsigned char>(word[at + static_cast<size_t>(k)])] >= 0;
    if (all_bytes) {
      for (int k = 0; k < len; ++k)
        ids->push_back(byte_token_[static_cast<unsigned char>(word[at + static_cast<size_t>(k)])]);
    } else if (unk_ >= 0) {
      if (!(spec_.model.fuse_unk && ids->size() > first_id && ids->back() == unk_)) ids->push_back(unk_);
    }  // no byte token and no unk token: the character is dropped, as the reference does
  }
}

bool HfTokenizer::cached(std::string_view piece, std::vector<int32_t>* ids) const {
  CacheShard& shard = cache_[FlatStringMap::hash(piece) % kCacheShards];
  const std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.ids.find(std::string(piece));
  if (it == shard.ids.end()) return false;
  ids->insert(ids->end(), it->second.begin(), it->second.end());
  return true;
}

void HfTokenizer::remember(std::string_view piece, const int32_t* ids, size_t count) const {
  CacheShard& shard = cache_[FlatStringMap::hash(piece) % kCacheShards];
  const std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.ids.size() >= kShardEntries) shard.ids.clear();
  shard.ids.emplace(std::string(piece), std::vector<int32_t>(ids, ids + count));
}

void HfTokenizer::encode_section(std::string_view text, size_t section_index, Scratch* s,
                                 std::vector<int32_t>* ids) const {
  if (!spec_.normalizers.empty()) {
    text = own(apply_normalizers(spec_.normalizers, text), s);
    if (text.empty()) return;
  }
  auto& pieces = s->pieces;
  auto& next = s->next;
  pieces.assign(1, text);
  for (const HfPreTokenizerStep& step : spec_.pre_tokenizers) {
    next.clear();
    for (std::string_view p : pieces) {
      switch (step.kind) {
        case HfPreTokenizerStep::split: step.regex->split_isolated(p, &next); break;
        case HfPreTokenizerStep::byte_level: {
          // The model works on bytes already: without a prefix or GPT-2's pattern this step
          // leaves every piece as it is.
          if (!step.add_prefix_space && !step.use_regex) {
            next.push_back(p);
            break;
          }
          if (step.add_prefix_space && (p.empty() || p[0] != ' ')) p = own(" " + std::string(p), s);
          if (step.use_regex) gpt2_pretokenize(p, &next);
          else next.push_back(p);
          break;
        }
        case HfPreTokenizerStep::metaspace: {
          std::string t;
          for (char c : p) {
            if (c == ' ') t += step.replacement;
            else t.push_back(c);
          }
          const bool prepend = step.prepend_scheme == HfPreTokenizerStep::always ||
                               (step.prepend_scheme == HfPreTokenizerStep::first && section_index == 0);
          if (prepend && t.compare(0, step.replacement.size(), step.replacement) != 0)
            t.insert(0, step.replacement);
          next.push_back(own(std::move(t), s));
          break;
        }
      }
    }
    pieces.swap(next);
  }
  const size_t start = ids->size();
  for (std::string_view p : pieces) encode_piece(p, s, ids, start);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
  Scratch s;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 16);
  size_t section = 0, start = 0, i = 0;
  // Added tokens first: at each position the longest one that starts there, left to right.
  while (i < text.size()) {
    if (!trie_.first[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    int32_t node = 0, found = -1;
    size_t found_end = 0;
    for (size_t j = i; j < text.size(); ++j) {
      auto it = trie_.edges.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[j]));
      if (it == trie_.edges.end()) break;
      node = it->second;
      if (trie_.token[static_cast<size_t>(node)] >= 0) {
        found = trie_.token[static_cast<size_t>(node)];
        found_end = j + 1;
      }
    }
    if (found < 0) {
      ++i;
      continue;
    }
    if (start < i) encode_section(text.substr(start, i - start), section++, &s, &ids);
    ids.push_back(found);
    ++section;
    i = start = found_end;
  }
  if (start < text.size()) encode_section(text.substr(start), section, &s, &ids);
  return ids;
}

}  // namespace trainer
