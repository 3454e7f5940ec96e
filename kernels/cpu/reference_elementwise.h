// The reference loops of the element-wise ops (GELU, add, scale, fill, cast) and sum of squares:
// literal definitions with std::tanh, single thread, that tests/kernels/test_cpu_elementwise.cpp
// holds the fast kernels to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cmath>
#include <cstdint>

namespace trainer::ref {

inline constexpr double kPi = 3.14159265358979323846;

// GELU, tanh approximation.
template <class F>
F gelu(F x) {
  const F s = std::sqrt(F(2) / F(kPi));
  return F(0.5) * x * (F(1) + std::tanh(s * (x + F(0.044715) * x * x * x)));
}

template <class F>
F gelu_grad(F x) {
  const F s = std::sqrt(F(2) / F(kPi));
  const F u = s * (x + F(0.044715) * x * x * x);
  const F th = std::tanh(u);
  const F du = s * (F(1) + F(3) * F(0.044715) * x * x);
  return F(0.5) * (F(1) + th) + F(0.5) * x * (F(1) - th * th) * du;
}

template <class F>
void gelu_forward(F* out, const F* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu(inp[i]);
}

template <class F>
void gelu_backward(F* dinp, const F* inp, const F* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dinp[i] = gelu_grad(inp[i]) * dout[i];
}

template <class F>
void add(F* out, const F* a, const F* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class F>
void scale(F* x, F alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

template <class F>
void fill(F* x, F value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = value;
}

template <class F>
void cast(F* dst, const F* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

template <class F>
double sum_squares(const F* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return s;
}

}  // namespace trainer::ref
