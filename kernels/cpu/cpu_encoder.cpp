// Token + position embedding, forward and backward (fast CPU path). A token's wpe row is its
// t, or positions[row] (packed documents whose positions restart).
// Backward scatters rows into dwte; repeated tokens make that a reduction, so it is split
// over column blocks (each block walks all rows in order) rather than over rows: the result
// does not depend on the thread count and needs no atomics.
#include <algorithm>

#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, const int32_t* positions,
                     int64_t B, int64_t T, int64_t C, int64_t V, int64_t vocab_start) {
  const int64_t rows = B * T;
#pragma omp parallel for schedule(static) if (rows * C > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = positions ? positions[r] : r % T;
    const int64_t id = tokens[r] - vocab_start;
    float* o = out + r * C;
    const float* w = (id >= 0 && id < V) ? wte + id * C : nullptr;
    const float* p = wpe ? wpe + t * C : nullptr;
    if (w && p) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) o[c] = w[c] + p[c];
    } else if (w) {
      std::copy(w, w + C, o);
    } else if (p) {
      std::copy(p, p + C, o);
    } else {
      std::fill(o, o + C, 0.0f);
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, const int32_t* positions,
                      int64_t B, int64_t T, int64_t C, int64_t V, int64_t vocab_start) {
  const int64_t blocks = (C + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (B * T * C > (1 << 15))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kColumnBlock;
    const int64_t width = std::min(kColumnBlock, C - c0);
    for (int64_t r = 0; r < B * T; ++r) {
      const float* d = dout + r * C + c0;
      const int64_t id = tokens[r] - vocab_start;
      if (id >= 0 && id < V) {
        float* w = dwte + id * C + c0;
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) w[c] += d[c];
      }
      if (dwpe) {
        float* p = dwpe + (positions ? positions[r] : r % T) * C + c0;
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) p[c] += d[c];
      }
    }
  }
}

void run(const EncoderForwardOp& op) {
  encoder_forward(f32(op.out), i32(op.tokens), f32(op.wte), f32(op.wpe), i32(op.positions), op.tokens.shape[0],
                  op.tokens.shape[1], matrix_cols(op.wte), matrix_rows(op.wte), op.vocab_start);
}

void run(const EncoderBackwardOp& op) {
  encoder_backward(f32(op.dwte), f32(op.dwpe), f32(op.dout), i32(op.tokens), i32(op.positions), op.tokens.shape[0],
                   op.tokens.shape[1], matrix_cols(op.dwte), matrix_rows(op.dwte), op.vocab_start);
}

}  // namespace trainer::cpu
