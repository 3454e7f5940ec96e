// Philox4x32-10 (kernels/base/philox.h) and the draws built on it.
#include "model/rng.h"

#include "kernels/base/philox.h"
#include "kernels/init_normal.h"

namespace trainer {

std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  const PhiloxBlock b = philox4x32_block(key, counter_hi, counter_lo);
  return {b.word[0], b.word[1], b.word[2], b.word[3]};
}

uint64_t name_hash(std::string_view name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

std::array<float, 4> normal4_at(uint64_t key, uint64_t stream, uint64_t block) { return normal4_host(key, stream, block); }

}  // namespace trainer
