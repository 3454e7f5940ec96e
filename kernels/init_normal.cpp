// The one host translation unit that instantiates kernels/base/box_muller.h: CMake compiles
// it with -ffp-contract=off (and defines TRAINER_FP_CONTRACT_OFF), so no multiply and add are
// fused and the host's bits are the CUDA kernel's (kernels/cuda/cuda_init.cu).
#include "kernels/init_normal.h"

#include <algorithm>

#include "kernels/base/box_muller.h"

namespace trainer {

std::array<float, 2> normal_pair_host(uint32_t radius_word, uint32_t angle_word) {
  const box_muller::Pair p = box_muller::normal_pair(radius_word, angle_word);
  return {p.value[0], p.value[1]};
}

std::array<float, 4> normal4_host(uint64_t key, uint64_t stream, uint64_t block) {
  const box_muller::Normals z = box_muller::normal4(key, stream, block);
  return {z.value[0], z.value[1], z.value[2], z.value[3]};
}

void init_normal_host(float* out, int64_t n, const NormalFill& fill) {
  if (n <= 0) return;
  const int64_t begin = fill.first, end = fill.first + n;
  const int64_t first_block = begin >> 2, last_block = (end + 3) >> 2;
#pragma omp parallel for schedule(static)
  for (int64_t b = first_block; b < last_block; ++b) {
    const box_muller::Normals z = box_muller::normal4(fill.key, fill.stream, uint64_t(b));
    for (int64_t e = std::max(begin, 4 * b); e < std::min(end, 4 * b + 4); ++e)
      out[e - begin] = e >= fill.zero_from ? 0.0f : float(fill.std * double(z.value[e & 3]));
  }
}

}  // namespace trainer
