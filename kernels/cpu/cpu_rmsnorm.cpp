// RMSNorm forward and backward (fast CPU path), over rows of a matrix and over the q and k
// heads of a qkv tensor (qk-norm). Forward and dinp are row-parallel; the weight gradients are
// sums over rows computed per block of columns, each block walking the rows in order, so they
// do not depend on the thread count. That pass runs before dinp is written, so dinp may alias
// dout.
//   y = x * r * w,  r = 1 / sqrt(mean(x^2) + eps)
//   dx = r * (w*dy - x * r^2 * mean(w*dy*x)),  dw += dy * x * r
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

// One row (or head) of C features.
inline float rms_row(float* y, const float* x, const float* w, int64_t C, float eps) {
  float ss = 0;
#pragma omp simd reduction(+ : ss)
  for (int64_t c = 0; c < C; ++c) ss += x[c] * x[c];
  const float r = 1.0f / std::sqrt(ss / float(C) + eps);
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) y[c] = x[c] * r * w[c];
  return r;
}

inline void rms_row_backward(float* dx, const float* dy, const float* x, const float* w, float r, int64_t C,
                             Accumulate mode) {
  float dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t c = 0; c < C; ++c) dot += w[c] * dy[c] * x[c];
  const float k = r * r * dot / float(C);
  if (mode == Accumulate::add) {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) dx[c] += r * (w[c] * dy[c] - x[c] * k);
  } else {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) dx[c] = r * (w[c] * dy[c] - x[c] * k);
  }
}

// dw[c0 .. c0+width) += sum over `count` vectors (stride `stride` floats apart, starting at
// column c0 of dy and x) of dy * x * r, in vector order.
void weight_grad_block(float* dw, const float* dy, const float* x, const float* r, int64_t count, int64_t stride,
                       int64_t c0, int64_t width) {
  float acc[kColumnBlock] = {};
  for (int64_t i = 0; i < count; ++i) {
    const float* d = dy + i * stride + c0;
    const float* xi = x + i * stride + c0;
    const float ri = r[i];
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) acc[c] += d[c] * xi[c] * ri;
  }
  for (int64_t c = 0; c < width; ++c) dw[c0 + c] += acc[c];
}

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps) {
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t n = 0; n < N; ++n) rstd[n] = rms_row(out + n * C, inp + n * C, weight, C, eps);
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C,
                      Accumulate dinp_mode) {
  const int64_t blocks = (C + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kColumnBlock;
    weight_grad_block(dweight, dout, inp, rstd, N, C, c0, std::min(kColumnBlock, C - c0));
  }
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t n = 0; n < N; ++n)
    rms_row_backward(dinp + n * C, dout + n * C, inp + n * C, weight, rstd[n], C, dinp_mode);
}

// rstd is laid out (rows, H + Hkv): the q heads then the k heads of each row.
void head_rmsnorm_forward(float* out, float* rstd, const float* inp, const float* q_weight,
                          const float* k_weight, int64_t rows, int64_t H, int64_t Hkv, int64_t D,
                          float eps) {
  const int64_t W = (H + 2 * Hkv) * D, normed = H + Hkv;
#pragma omp parallel for schedule(static) if (rows * W > kParallelMin)
  for (int64_t n = 0; n < rows; ++n) {
    const float* x = inp + n * W;
    float* y = out + n * W;
    for (int64_t h = 0; h < normed; ++h)
      rstd[n * normed + h] = rms_row(y + h * D, x + h * D, h < H ? q_weight : k_weight, D, eps);
    std::copy(x + normed * D, x + W, y + normed * D);
  }
}

void head_rmsnorm_backward(float* dinp, float* dq_weight, float* dk_weight, const float* dout,
                           const float* inp, const float* q_weight, const float* k_weight,
                           const float* rstd, int64_t rows, int64_t H, int64_t Hkv, int64_t D) {
  const int64_t W = (H + 2 * Hkv) * D, normed = H + Hkv;
  const int64_t blocks = (D + kColumnBlock - 1) / kColumnBlock;
  // The weight gradients: per column block, rows in order and within a row the heads in order
  // (a q head's D features are `D` floats apart, so the (row, head) vectors of one kind are
  // visited as one strided sequence per row).
#pragma omp parallel for schedule(static) if (rows * W > kParallelMin)
  for (int64_t task = 0; task < 2 * blocks; ++task) {
    const bool q = task < blocks;
    const int64_t c0 = (task % blocks) * kColumnBlock, width = std::min(kColumnBlock, D - c0);
    float* dw = q ? dq_weight : dk_weight;
    const int64_t h0 = q ? 0 : H, count = q ? H : Hkv;
    for (int64_t n = 0; n < rows; ++n)
      weight_grad_block(dw, dout + n * W + h0 * D, inp + n * W + h0 * D, rstd + n * normed + h0, count, D, c0,
                        width);
  }
#pragma omp parallel for schedule(static) if (rows * W > kParallelMin)
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t h = 0; h < normed; ++h)
      rms_row_backward(dinp + n * W + h * D, dout + n * W + h * D, inp + n * W + h * D, h < H ? q_weight : k_weight,
                       rstd[n * normed + h], D, Accumulate::overwrite);
    if (dinp != dout) std::copy(dout + n * W + normed * D, dout + n * W + W, dinp + n * W + normed * D);
  }
}

void run(const RmsnormForwardOp& op) {
  rmsnorm_forward(f32(op.out), f32(op.rstd), f32(op.inp), f32(op.weight), matrix_rows(op.inp), matrix_cols(op.inp),
                  op.eps);
}

void run(const RmsnormBackwardOp& op) {
  rmsnorm_backward(f32(op.dinp), f32(op.dweight), f32(op.dout), f32(op.inp), f32(op.weight), f32(op.rstd),
                   matrix_rows(op.inp), matrix_cols(op.inp), op.dinp_mode);
}

void run(const HeadRmsnormForwardOp& op) {
  const AttentionDims s = attention_dims(op.inp, op.n_head, op.n_kv_head);
  head_rmsnorm_forward(f32(op.out), f32(op.rstd), f32(op.inp), f32(op.q_weight), f32(op.k_weight), s.B * s.T, s.H,
                       s.Hkv, s.D, op.eps);
}

void run(const HeadRmsnormBackwardOp& op) {
  const AttentionDims s = attention_dims(op.inp, op.n_head, op.n_kv_head);
  head_rmsnorm_backward(f32(op.dinp), f32(op.dq_weight), f32(op.dk_weight), f32(op.dout), f32(op.inp),
                        f32(op.q_weight), f32(op.k_weight), f32(op.rstd), s.B * s.T, s.H, s.Hkv, s.D);
}

}  // namespace trainer::cpu
