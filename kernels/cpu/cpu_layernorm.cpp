// LayerNorm forward and backward (fast CPU path), eps 1e-5, biased variance like PyTorch.
// Forward and dinp are row-parallel. dweight/dbias are sums over rows, computed per block of
// columns (each block walks the rows in order) so the sums do not depend on the thread count.
// That pass runs before dinp is written, so dinp may even alias dout.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {
constexpr float kEps = 1e-5f;
}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static) if (N * C > (1 << 14))
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < C; ++c) sum += x[c];
    const float m = sum / float(C);
    float var = 0;
#pragma omp simd reduction(+ : var)
    for (int64_t c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    const float s = 1.0f / std::sqrt(var / float(C) + kEps);
    float* o = out + n * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C, Accumulate dinp_mode) {
  const int64_t blocks = (C + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (N * C > (1 << 14))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kColumnBlock;
    const int64_t width = std::min(kColumnBlock, C - c0);
    float dw[kColumnBlock] = {};
    float db[kColumnBlock] = {};
    for (int64_t n = 0; n < N; ++n) {
      const float* x = inp + n * C + c0;
      const float* d = dout + n * C + c0;
      const float m = mean[n];
      const float s = rstd[n];
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) {
        dw[c] += (x[c] - m) * s * d[c];
        db[c] += d[c];
      }
    }
    for (int64_t c = 0; c < width; ++c) {
      dweight[c0 + c] += dw[c];
      dbias[c0 + c] += db[c];
    }
  }

#pragma omp parallel for schedule(static) if (N * C > (1 << 14))
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    const float* d = dout + n * C;
    const float m = mean[n];
    const float s = rstd[n];
    float dnorm_sum = 0;
    float dnorm_norm_sum = 0;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
    for (int64_t c = 0; c < C; ++c) {
      const float dnorm = weight[c] * d[c];
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * (x[c] - m) * s;
    }
    const float dnorm_mean = dnorm_sum / float(C);
    const float dnorm_norm_mean = dnorm_norm_sum / float(C);
    float* g = dinp + n * C;
    if (dinp_mode == Accumulate::add) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c)
        g[c] += (weight[c] * d[c] - dnorm_mean - (x[c] - m) * s * dnorm_norm_mean) * s;
    } else {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c)
        g[c] = (weight[c] * d[c] - dnorm_mean - (x[c] - m) * s * dnorm_norm_mean) * s;
    }
  }
}

void run(const LayernormForwardOp& op) {
  layernorm_forward(f32(op.out), f32(op.mean), f32(op.rstd), f32(op.inp), f32(op.weight), f32(op.bias),
                    matrix_rows(op.inp), matrix_cols(op.inp));
}

void run(const LayernormBackwardOp& op) {
  layernorm_backward(f32(op.dinp), f32(op.dweight), f32(op.dbias), f32(op.dout), f32(op.inp), f32(op.weight),
                     f32(op.mean), f32(op.rstd), matrix_rows(op.inp), matrix_cols(op.inp), op.dinp_mode);
}

}  // namespace trainer::cpu
