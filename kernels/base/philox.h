// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so a value is a pure function of (key, counter) and any thread of
// any device can draw any number without generator state. Integer arithmetic only, so host and
// CUDA device give the same bits; compiled for both where nvcc includes it.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TRAINER_PHILOX_FN __host__ __device__ inline
#else
#define TRAINER_PHILOX_FN inline
#endif

namespace trainer {

struct PhiloxBlock {
  uint32_t word[4];
};

TRAINER_PHILOX_FN PhiloxBlock philox4x32_block(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = uint32_t(p1);
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = uint32_t(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

}  // namespace trainer

#undef TRAINER_PHILOX_FN
