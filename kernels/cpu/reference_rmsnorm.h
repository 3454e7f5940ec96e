// The reference loops of RMSNorm and the per-head RMSNorm (RmsnormForwardOp ...
// HeadRmsnormBackwardOp): literal definitions, single thread, that
// tests/kernels/test_cpu_rmsnorm.cpp holds the fast kernels to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/op_modes.h"

namespace trainer::ref {

namespace detail {

// One row: y = x * r * w; returns r = 1 / sqrt(mean(x^2) + eps).
template <class F>
F rms_one(F* y, const F* x, const F* w, int64_t C, F eps) {
  F ss = 0;
  for (int64_t c = 0; c < C; ++c) ss += x[c] * x[c];
  const F r = F(1) / std::sqrt(ss / F(C) + eps);
  for (int64_t c = 0; c < C; ++c) y[c] = x[c] * r * w[c];
  return r;
}

// dx per mode; dw += dy * x * r.
template <class F>
void rms_one_backward(F* dx, F* dw, const F* dy, const F* x, const F* w, F r, int64_t C, Accumulate mode) {
  F dot = 0;
  for (int64_t c = 0; c < C; ++c) dot += w[c] * dy[c] * x[c];
  for (int64_t c = 0; c < C; ++c) {
    const F g = r * (w[c] * dy[c] - x[c] * r * r * dot / F(C));
    dx[c] = mode == Accumulate::add ? dx[c] + g : g;
    dw[c] += dy[c] * x[c] * r;
  }
}

}  // namespace detail

// RMSNorm: out (N,C) = inp * rstd * weight, rstd (N) = 1 / sqrt(mean(inp^2) + eps).
template <class F>
void rmsnorm_forward(F* out, F* rstd, const F* inp, const F* weight, int64_t N, int64_t C, F eps) {
  for (int64_t n = 0; n < N; ++n) rstd[n] = detail::rms_one(out + n * C, inp + n * C, weight, C, eps);
}

// dinp (N,C) overwritten or added per dinp_mode; dweight (C) +=.
template <class F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight, const F* rstd,
                      int64_t N, int64_t C, Accumulate dinp_mode) {
  for (int64_t n = 0; n < N; ++n)
    detail::rms_one_backward(dinp + n * C, dweight, dout + n * C, inp + n * C, weight, rstd[n], C, dinp_mode);
}

// RMSNorm of each q and k head of rows of (H + 2*Hkv)*D; rstd (rows, H + Hkv); v copied.
template <class F>
void head_rmsnorm_forward(F* out, F* rstd, const F* inp, const F* q_weight, const F* k_weight, int64_t rows,
                          int64_t H, int64_t Hkv, int64_t D, F eps) {
  const int64_t W = (H + 2 * Hkv) * D;
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t h = 0; h < H + Hkv; ++h)
      rstd[n * (H + Hkv) + h] =
          detail::rms_one(out + n * W + h * D, inp + n * W + h * D, h < H ? q_weight : k_weight, D, eps);
    for (int64_t c = (H + Hkv) * D; c < W; ++c) out[n * W + c] = inp[n * W + c];
  }
}

template <class F>
void head_rmsnorm_backward(F* dinp, F* dq_weight, F* dk_weight, const F* dout, const F* inp, const F* q_weight,
                           const F* k_weight, const F* rstd, int64_t rows, int64_t H, int64_t Hkv, int64_t D) {
  const int64_t W = (H + 2 * Hkv) * D;
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t h = 0; h < H + Hkv; ++h)
      detail::rms_one_backward(dinp + n * W + h * D, h < H ? dq_weight : dk_weight, dout + n * W + h * D,
                               inp + n * W + h * D, h < H ? q_weight : k_weight, rstd[n * (H + Hkv) + h], D,
                               Accumulate::overwrite);
    for (int64_t c = (H + Hkv) * D; c < W; ++c) dinp[n * W + c] = dout[n * W + c];
  }
}

}  // namespace trainer::ref
