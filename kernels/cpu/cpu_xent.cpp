// Softmax cross-entropy over the (local slice of the) vocabulary, in three row-parallel passes
// so that a vocabulary-parallel caller can reduce max, sum-exp and target logit across its
// tensor group in between (see kernels/backend.h). Only the first valid_cols columns are real
// vocabulary; padding columns are never read by the forward passes and get gradient 0.
// Each row belongs to one thread, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

void xent_max(float* maxes, const float* logits, int64_t N, int64_t Vl, int64_t valid_cols) {
#pragma omp parallel for schedule(static) if (N * valid_cols > (1 << 15))
  for (int64_t n = 0; n < N; ++n) {
    maxes[n] = max_of(logits + n * Vl, valid_cols);
  }
}

void xent_sumexp(float* sumexp, float* target_logit, const float* logits, const float* maxes,
                 const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                 int64_t valid_cols) {
#pragma omp parallel for schedule(static) if (N * valid_cols > (1 << 15))
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits + n * Vl;
    const float mx = maxes[n];
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t v = 0; v < valid_cols; ++v) s += exp_fast(row[v] - mx);
    sumexp[n] = s;
    const int64_t col = targets[n] - vocab_start;
    target_logit[n] = (col >= 0 && col < valid_cols) ? row[col] : 0.0f;
  }
}

void xent_loss(float* losses, const float* maxes, const float* sumexp, const float* target_logit,
               int64_t N) {
  for (int64_t n = 0; n < N; ++n) losses[n] = std::log(sumexp[n]) + maxes[n] - target_logit[n];
}

void xent_backward(float* dlogits, const float* logits, const float* maxes, const float* sumexp,
                   const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                   int64_t valid_cols, float dloss) {
#pragma omp parallel for schedule(static) if (N * Vl > (1 << 15))
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits + n * Vl;
    float* grad = dlogits + n * Vl;
    const float mx = maxes[n];
    const float inv = dloss / sumexp[n];
    const int64_t col = targets[n] - vocab_start;
    // A target in this slice: its gradient uses the logit before the row is overwritten.
    const float target_grad =
        (col >= 0 && col < valid_cols) ? exp_fast(row[col] - mx) * inv - dloss : 0.0f;
#pragma omp simd
    for (int64_t v = 0; v < valid_cols; ++v) grad[v] = exp_fast(row[v] - mx) * inv;
    std::fill(grad + valid_cols, grad + Vl, 0.0f);
    if (col >= 0 && col < valid_cols) grad[col] = target_grad;
  }
}

}  // namespace trainer::cpu
