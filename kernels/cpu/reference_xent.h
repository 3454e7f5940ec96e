// The reference loops of the three-pass cross-entropy (XentMaxOp ... XentBackwardOp): literal
// definitions, single thread, that tests/kernels/test_cpu_xent.cpp holds the fast kernels to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace trainer::ref {

// Cross-entropy passes; logits (N,Vl) with the first valid_cols columns real; targets (N)
// global ids.
template <class F>
void xent_max(F* maxes, const F* logits, int64_t N, int64_t Vl, int64_t valid_cols) {
  for (int64_t n = 0; n < N; ++n) {
    F mx = -std::numeric_limits<F>::infinity();
    for (int64_t v = 0; v < valid_cols; ++v) mx = std::max(mx, logits[n * Vl + v]);
    maxes[n] = mx;
  }
}

template <class F>
void xent_sumexp(F* sumexp, F* target_logit, const F* logits, const F* maxes,
                 const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                 int64_t valid_cols) {
  for (int64_t n = 0; n < N; ++n) {
    F s = 0;
    for (int64_t v = 0; v < valid_cols; ++v) s += std::exp(logits[n * Vl + v] - maxes[n]);
    sumexp[n] = s;
    const int64_t col = targets[n] - vocab_start;
    target_logit[n] = (col >= 0 && col < valid_cols) ? logits[n * Vl + col] : F(0);
  }
}

template <class F>
void xent_loss(F* losses, const F* maxes, const F* sumexp, const F* target_logit, int64_t N) {
  for (int64_t n = 0; n < N; ++n) losses[n] = std::log(sumexp[n]) + maxes[n] - target_logit[n];
}

template <class F>
void xent_backward(F* dlogits, const F* logits, const F* maxes, const F* sumexp,
                   const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                   int64_t valid_cols, F dloss) {
  for (int64_t n = 0; n < N; ++n) {
    const int64_t col = targets[n] - vocab_start;
    for (int64_t v = 0; v < Vl; ++v) {
      F g = 0;
      if (v < valid_cols) {
        const F p = std::exp(logits[n * Vl + v] - maxes[n]) / sumexp[n];
        g = dloss * (p - (v == col ? F(1) : F(0)));
      }
      dlogits[n * Vl + v] = g;
    }
  }
}

}  // namespace trainer::ref
