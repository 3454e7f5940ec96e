// Text over a Comm (see comm_text.h).
#include "parallel/comm_text.h"

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

namespace trainer {

std::string broadcast_text(Comm& comm, const std::string& text, int root) {
  const bool mine = comm.rank() == root;
  int32_t length = mine ? int32_t(text.size()) : 0;
  comm.broadcast(make_tensor(&length, DType::i32, Device::cpu, {1}), root);
  std::vector<int32_t> words((size_t(length) + 3) / 4, 0);
  if (mine && !text.empty()) std::memcpy(words.data(), text.data(), text.size());  // data() may be null when empty
  if (!words.empty()) comm.broadcast(make_tensor(words.data(), DType::i32, Device::cpu, {int64_t(words.size())}), root);
  return std::string(reinterpret_cast<const char*>(words.data()), size_t(length));
}

std::vector<std::string> all_gather_short_texts(Comm& comm, const std::string& text, size_t slot_bytes) {
  std::vector<int32_t> slot(slot_bytes / 4, 0), all(slot_bytes / 4 * size_t(comm.size()), 0);
  if (!text.empty()) std::memcpy(slot.data(), text.data(), std::min(text.size(), slot_bytes - 1));
  comm.all_gather(make_tensor(all.data(), DType::i32, Device::cpu, {int64_t(all.size())}),
                  make_tensor(slot.data(), DType::i32, Device::cpu, {int64_t(slot.size())}));
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r) {
    const char* t = reinterpret_cast<const char*>(all.data()) + size_t(r) * slot_bytes;
    out.emplace_back(t, strnlen(t, slot_bytes));
  }
  return out;
}

}  // namespace trainer
