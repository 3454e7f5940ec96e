// The reference loops of SwiGLU (SwigluForwardOp, SwigluBackwardOp): literal definitions with
// std::exp, single thread, that tests/kernels/test_cpu_swiglu.cpp holds the fast kernels to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cmath>
#include <cstdint>

namespace trainer::ref {

namespace detail {

template <class F>
F sigmoid(F x) {
  return F(1) / (F(1) + std::exp(-x));
}

}  // namespace detail

// out (N,F) = silu(gate) * up for rows [gate | up] of inp (N,2F); backward into dinp (N,2F).
template <class F>
void swiglu_forward(F* out, const F* inp, int64_t N, int64_t Fw) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < Fw; ++i) {
      const F g = inp[n * 2 * Fw + i], u = inp[n * 2 * Fw + Fw + i];
      out[n * Fw + i] = g * detail::sigmoid(g) * u;
    }
}

template <class F>
void swiglu_backward(F* dinp, const F* inp, const F* dout, int64_t N, int64_t Fw) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < Fw; ++i) {
      const F g = inp[n * 2 * Fw + i], u = inp[n * 2 * Fw + Fw + i], d = dout[n * Fw + i];
      const F s = detail::sigmoid(g);
      dinp[n * 2 * Fw + i] = d * u * s * (F(1) + g * (F(1) - s));
      dinp[n * 2 * Fw + Fw + i] = d * g * s;
    }
}

}  // namespace trainer::ref
