// Softmax cross-entropy over the (local slice of the) vocabulary, in three row-parallel passes
// so that a vocabulary-parallel caller can reduce max, sum-exp and target logit across its
// tensor group in between (see kernels/backend.h), or fused (xent_fused, tensor degree 1): all
// passes over one row while it is in cache, the exponentials kept in place for the gradient,
// so one read and one write of the logits reach memory instead of three reads and a write.
// The fused op gives the unfused passes' bits: both sum through sum_exp and round the
// gradient in the same expressions. Only the first valid_cols columns are real vocabulary;
// padding columns are never read by the forward passes and get gradient 0.
// Each row belongs to one thread, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {

constexpr int64_t kParallelMin = 1 << 15;  // elements; below this a parallel region costs more

// Sum over v < n of exp(row[v] - mx); with kStore each exponential is also written to out[v]
// (out may be row). One loop for both users, so both sum in the same order.
template <bool kStore>
float sum_exp(float* out, const float* row, float mx, int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t v = 0; v < n; ++v) {
    const float e = exp_fast(row[v] - mx);
    if constexpr (kStore) out[v] = e;
    s += e;
  }
  return s;
}

// The per-row expressions both paths round through, so the fused op keeps the unfused bits.
inline float row_loss(float sumexp, float mx, float target_logit) { return std::log(sumexp) + mx - target_logit; }
inline float row_target_grad(float e, float inv, float dloss) { return e * inv - dloss; }

}  // namespace

void xent_max(float* maxes, const float* logits, int64_t N, int64_t Vl, int64_t valid_cols) {
#pragma omp parallel for schedule(static) if (N * valid_cols > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    maxes[n] = max_of(logits + n * Vl, valid_cols);
  }
}

void xent_sumexp(float* sumexp, float* target_logit, const float* logits, const float* maxes,
                 const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                 int64_t valid_cols) {
#pragma omp parallel for schedule(static) if (N * valid_cols > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits + n * Vl;
    sumexp[n] = sum_exp<false>(nullptr, row, maxes[n], valid_cols);
    const int64_t col = targets[n] - vocab_start;
    target_logit[n] = (col >= 0 && col < valid_cols) ? row[col] : 0.0f;
  }
}

void xent_loss(float* losses, const float* maxes, const float* sumexp, const float* target_logit,
               int64_t N) {
  for (int64_t n = 0; n < N; ++n) losses[n] = row_loss(sumexp[n], maxes[n], target_logit[n]);
}

void xent_backward(float* dlogits, const float* logits, const float* maxes, const float* sumexp,
                   const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                   int64_t valid_cols, float dloss) {
#pragma omp parallel for schedule(static) if (N * Vl > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits + n * Vl;
    float* grad = dlogits + n * Vl;
    const float mx = maxes[n];
    const float inv = dloss / sumexp[n];
    const int64_t col = targets[n] - vocab_start;
    // A target in this slice: its gradient uses the logit before the row is overwritten.
    const float target_grad =
        (col >= 0 && col < valid_cols) ? row_target_grad(exp_fast(row[col] - mx), inv, dloss) : 0.0f;
#pragma omp simd
    for (int64_t v = 0; v < valid_cols; ++v) grad[v] = exp_fast(row[v] - mx) * inv;
    std::fill(grad + valid_cols, grad + Vl, 0.0f);
    if (col >= 0 && col < valid_cols) grad[col] = target_grad;
  }
}

void xent_fused(float* losses, float* logits, const int32_t* targets, int64_t N, int64_t V,
                int64_t valid_cols, XentGrad grad, float dloss) {
#pragma omp parallel for schedule(static) if (N * V > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    float* row = logits + n * V;
    const float mx = max_of(row, valid_cols);
    const int64_t col = targets[n];
    const bool target_valid = col >= 0 && col < valid_cols;
    const float target_logit = target_valid ? row[col] : 0.0f;
    const float s = grad == XentGrad::in_place ? sum_exp<true>(row, row, mx, valid_cols)
                                               : sum_exp<false>(nullptr, row, mx, valid_cols);
    losses[n] = row_loss(s, mx, target_logit);
    if (grad != XentGrad::in_place) continue;
    const float inv = dloss / s;
    const float target_grad = target_valid ? row_target_grad(row[col], inv, dloss) : 0.0f;
#pragma omp simd
    for (int64_t v = 0; v < valid_cols; ++v) row[v] = row[v] * inv;
    std::fill(row + valid_cols, row + V, 0.0f);
    if (target_valid) row[col] = target_grad;
  }
}

void run(const XentMaxOp& op) {
  xent_max(f32(op.maxes), f32(op.logits), matrix_rows(op.logits), matrix_cols(op.logits), op.valid_cols);
}

void run(const XentSumexpOp& op) {
  xent_sumexp(f32(op.sumexp), f32(op.target_logit), f32(op.logits), f32(op.maxes), i32(op.targets),
              matrix_rows(op.logits), matrix_cols(op.logits), op.vocab_start, op.valid_cols);
}

void run(const XentLossOp& op) {
  xent_loss(f32(op.losses), f32(op.maxes), f32(op.sumexp), f32(op.target_logit), op.losses.numel());
}

void run(const XentBackwardOp& op) {
  xent_backward(f32(op.dlogits), f32(op.logits), f32(op.maxes), f32(op.sumexp), i32(op.targets),
                matrix_rows(op.logits), matrix_cols(op.logits), op.vocab_start, op.valid_cols, op.dloss);
}

// The unfused passes' results, bit for bit, in one pass over each row.
void run(const XentFusedOp& op) {
  xent_fused(f32(op.losses), f32(op.logits), i32(op.targets), matrix_rows(op.logits), matrix_cols(op.logits),
             op.valid_cols, op.grad, op.dloss);
}

}  // namespace trainer::cpu
