// broadcast_text (see comm_text.h).
#include "parallel/comm_text.h"

#include <cstdint>
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

}  // namespace trainer
