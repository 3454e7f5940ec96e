// String -> id lookup for tokenizer vocabularies: open addressing (linear probing, at most
// half full) over 32-byte slots that hold the key's hash, its length and the key itself when
// it is at most kInline bytes (most tokens), else a pointer to its bytes: a hit on a short
// key reads one cache line. Long keys are not copied: the strings they point into must outlive
// the map and never move. Inserting a key that is present replaces its id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace trainer {

class FlatStringMap {
 public:
  void insert(std::string_view key, int32_t id);
  void erase(std::string_view key);  // no-op when absent
  // The id of key, or -1.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(key);
    for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.id == kEmpty) return -1;
      if (s.hash == h && s.length == key.size() && s.id >= 0 && equal(s, key)) return s.id;
    }
  }
  size_t size() const { return size_; }

  static uint64_t hash(std::string_view key) {
    uint64_t h = 0x243F6A8885A308D3ull ^ key.size();
    size_t i = 0;
    for (; i + 8 <= key.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, key.data() + i, 8);
      h = (h ^ w) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
    uint64_t tail = 0;
    for (size_t k = 0; i + k < key.size(); ++k)
      tail |= static_cast<uint64_t>(static_cast<unsigned char>(key[i + k])) << (8 * k);
    h = (h ^ tail) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
  }

 private:
  static constexpr size_t kInline = 16;
  // Slot states in the id field: an id >= 0 is live; erased slots keep probing going.
  static constexpr int32_t kEmpty = -1, kErased = -2;
  struct Slot {
    uint64_t hash = 0;
    union {
      char bytes[kInline];  // length <= kInline
      const char* pointer;  // length > kInline
    } key{};
    uint32_t length = 0;
    int32_t id = kEmpty;
  };
  static_assert(sizeof(Slot) == 32, "two slots per cache line");
  static bool equal(const Slot& s, std::string_view key) {
    const char* bytes = s.length <= kInline ? s.key.bytes : s.key.pointer;
    return std::memcmp(bytes, key.data(), key.size()) == 0;
  }
  void grow();
  std::vector<Slot> slots_;
  size_t size_ = 0, used_ = 0;  // live keys; slots not empty (live or erased)
};

}  // namespace trainer
