// Open-addressing string map (see flat_string_map.h).
#include "data/flat_string_map.h"

#include <stdexcept>

namespace trainer {

void FlatStringMap::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  size_t n = 1024;
  while (n < 4 * (size_ + 1)) n *= 2;
  slots_.assign(n, Slot{});
  size_ = used_ = 0;
  for (const Slot& s : old)
    if (s.id >= 0)
      insert(std::string_view(s.length <= kInline ? s.key.bytes : s.key.pointer, s.length), s.id);
}

void FlatStringMap::insert(std::string_view key, int32_t id) {
  if (id < 0) throw std::logic_error("FlatStringMap::insert: ids are >= 0");
  if (key.size() > UINT32_MAX) throw std::logic_error("FlatStringMap::insert: key too long");
  if (2 * (used_ + 1) > slots_.size()) grow();
  const uint64_t h = hash(key);
  for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& s = slots_[i];
    if (s.id == kEmpty) {
      s.hash = h;
      s.length = static_cast<uint32_t>(key.size());
      if (key.size() <= kInline) std::memcpy(s.key.bytes, key.data(), key.size());
      else s.key.pointer = key.data();
      s.id = id;
      ++size_;
      ++used_;
      return;
    }
    if (s.id >= 0 && s.hash == h && s.length == key.size() && equal(s, key)) {
      s.id = id;
      return;
    }
  }
}

void FlatStringMap::erase(std::string_view key) {
  if (slots_.empty()) return;
  const uint64_t h = hash(key);
  for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& s = slots_[i];
    if (s.id == kEmpty) return;
    if (s.id >= 0 && s.hash == h && s.length == key.size() && equal(s, key)) {
      s.id = kErased;
      --size_;
      return;
    }
  }
}

}  // namespace trainer
