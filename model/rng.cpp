// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
#include "model/rng.h"

#include <cmath>

namespace trainer {

std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = uint32_t(p1);
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = uint32_t(p0);
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

uint64_t name_hash(std::string_view name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

double normal_at(uint64_t key, uint64_t stream, uint64_t index) {
  auto r = philox4x32(key, stream, index);
  double u1 = uniform_open(r[0]), u2 = uniform_open(r[1]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::array<float, 4> normal4_at(uint64_t key, uint64_t stream, uint64_t block) {
  auto r = philox4x32(key, stream, block);
  // Uniforms in (0, 1) from 24 bits: every one is exact in float and none is 0 or 1.
  auto u = [](uint32_t bits) { return (float(bits >> 8) + 0.5f) * (1.0f / 16777216.0f); };
  constexpr float kTwoPi = 6.28318530717958647692f;
  const float a = std::sqrt(-2.0f * std::log(u(r[0]))), ta = kTwoPi * u(r[1]);
  const float b = std::sqrt(-2.0f * std::log(u(r[2]))), tb = kTwoPi * u(r[3]);
  return {a * std::cos(ta), a * std::sin(ta), b * std::cos(tb), b * std::sin(tb)};
}

}  // namespace trainer
