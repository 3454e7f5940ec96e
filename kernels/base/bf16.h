// bf16 on the host: the conversions the CPU backend's cast and MpiComm's bf16 sum use.
// Invariant: bf16_from_f32 rounds to nearest, ties to even, as CUDA's __float2bfloat16 does,
// and keeps a NaN a (quiet) NaN; f32_from_bf16 is exact.
#pragma once

#include <cstdint>
#include <cstring>

namespace trainer {

inline uint16_t bf16_from_f32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // NaN: quiet, never rounded to inf
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f32_from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace trainer
