// The reference loop of the rotary embedding (RopeForwardOp, RopeBackwardOp): a literal
// definition, single thread, that tests/kernels/test_cpu_rope.cpp holds the fast kernel to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cmath>
#include <cstdint>

namespace trainer::ref {

// Rotate-half rotary embedding of the q and k heads of (B,T,(H+2*Hkv)*D), angle
// float(pos_offset + t) * inv_freq[i] (in f32, as the kernels), or positions[b*T+t] in place of
// pos_offset + t; direction -1 is the transpose.
template <class F>
void rope(F* out, const F* inp, const float* inv_freq, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
          int64_t pos_offset, int direction, const int32_t* positions = nullptr) {
  const int64_t W = (H + 2 * Hkv) * D, half = D / 2;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const F* x = inp + (b * T + t) * W;
      F* y = out + (b * T + t) * W;
      for (int64_t h = 0; h < H + Hkv; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const float angle = float(positions ? positions[b * T + t] : pos_offset + t) * inv_freq[i];
          const F c = F(std::cos(angle)), s = F(direction) * F(std::sin(angle));
          const F a = x[h * D + i], e = x[h * D + i + half];
          y[h * D + i] = a * c - e * s;
          y[h * D + i + half] = e * c + a * s;
        }
      for (int64_t c = (H + Hkv) * D; c < W; ++c) y[c] = x[c];
    }
}

}  // namespace trainer::ref
