// The reference loops of LayerNorm (LayernormForwardOp, LayernormBackwardOp): literal
// definitions, single thread, that tests/kernels/test_cpu_layernorm.cpp holds the fast kernels to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/op_modes.h"

namespace trainer::ref {

inline constexpr double kLayernormEps = 1e-5;

// out (N,C); mean, rstd (N); inp (N,C); weight, bias (C). Biased variance, eps 1e-5.
template <class F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias,
                       int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const F* x = inp + n * C;
    F m = 0;
    for (int64_t c = 0; c < C; ++c) m += x[c];
    m /= F(C);
    F var = 0;
    for (int64_t c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    var /= F(C);
    const F s = F(1) / std::sqrt(var + F(kLayernormEps));
    for (int64_t c = 0; c < C; ++c) out[n * C + c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

// dinp (N,C) overwritten or added per dinp_mode; dweight, dbias (C) +=.
template <class F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp,
                        const F* weight, const F* mean, const F* rstd, int64_t N, int64_t C,
                        Accumulate dinp_mode) {
  for (int64_t n = 0; n < N; ++n) {
    const F* x = inp + n * C;
    const F* d = dout + n * C;
    F dnorm_mean = 0;
    F dnorm_norm_mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      const F norm = (x[c] - mean[n]) * rstd[n];
      dnorm_mean += weight[c] * d[c];
      dnorm_norm_mean += weight[c] * d[c] * norm;
    }
    dnorm_mean /= F(C);
    dnorm_norm_mean /= F(C);
    for (int64_t c = 0; c < C; ++c) {
      const F norm = (x[c] - mean[n]) * rstd[n];
      dbias[c] += d[c];
      dweight[c] += norm * d[c];
      const F g = (weight[c] * d[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
      dinp[n * C + c] = dinp_mode == Accumulate::add ? dinp[n * C + c] + g : g;
    }
  }
}

}  // namespace trainer::ref
