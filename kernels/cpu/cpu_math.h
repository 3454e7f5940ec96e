// Scalar math for the fast CPU kernels, written so that GCC vectorises it inside
// `#pragma omp simd` loops: glibc's expf/tanhf have no vector variants without -ffast-math,
// and a scalar call per element would make GELU and the cross-entropy compute-bound.
// Accuracy: exp_fast is within 2 ulp of expf on [-87.3, 88]; below that it returns 0 and
// above it saturates at exp(88) (the kernels only feed it max-subtracted logits and GELU
// arguments). NaN propagates.
#pragma once

#include <cstdint>
#include <cstring>

namespace trainer::cpu {

inline float exp_fast(float x) {
  // Cephes expf: x = k ln2 + r with |r| <= ln2 / 2, exp(r) by a degree-7 polynomial,
  // then scaled by 2^k built directly in the exponent bits.
  // NaN clamps to 88 too (it fails x <= 88): converting a NaN k to int below would be
  // undefined behaviour (UBSan). The result for NaN is x itself, chosen at the end.
  const float xc = !(x <= 88.0f) ? 88.0f : (x < -88.0f ? -88.0f : x);
  const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float k = (xc * 1.44269504088896341f + round_magic) - round_magic;
  const float r = (xc - k * 0.693359375f) - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  const float y = p * scale;
  return x < -87.33654f ? 0.0f : (x == x ? y : x);
}

// GELU, tanh approximation, in the overflow-free form
// 0.5 x (1 + tanh(u)) = x * sigmoid(2u),  u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;

inline float gelu_fast(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  return x / (1.0f + exp_fast(-2.0f * u));
}

// d gelu / dx = s + 2 x s (1 - s) u'(x), s = sigmoid(2u).
inline float gelu_grad_fast(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
  const float s = 1.0f / (1.0f + exp_fast(-2.0f * u));
  return s + 2.0f * x * s * (1.0f - s) * du;
}

// Maximum of x[0..n), -inf when n == 0; NaNs are skipped. GCC vectorises neither a float max
// reduction nor scalar running maxima without -ffinite-math-only, so this uses its vector
// extension: two accumulators of 8 lanes (one AVX register each, so `v > acc ? v : acc` is one
// vmaxps; a 16-lane type, wider than x86-64-v3's registers, was scalarised: 3 GB/s), folded
// at the end.
inline float max_of(const float* x, int64_t n) {
  typedef float Lanes __attribute__((vector_size(32)));
  constexpr int64_t kLanes = 8;
  const float neg_inf = -__builtin_inff();
  Lanes acc0 = {neg_inf, neg_inf, neg_inf, neg_inf, neg_inf, neg_inf, neg_inf, neg_inf};
  Lanes acc1 = acc0;
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    Lanes v0, v1;
    std::memcpy(&v0, x + i, sizeof v0);
    std::memcpy(&v1, x + i + kLanes, sizeof v1);
    acc0 = v0 > acc0 ? v0 : acc0;
    acc1 = v1 > acc1 ? v1 : acc1;
  }
  float m = neg_inf;
  for (int64_t l = 0; l < kLanes; ++l) {
    m = acc0[l] > m ? acc0[l] : m;
    m = acc1[l] > m ? acc1[l] : m;
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace trainer::cpu
