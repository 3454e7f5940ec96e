// Rotary position embedding (fast CPU path), Hugging Face's rotate-half layout: in every q
// and k head, feature i (i < D/2) pairs with feature i + D/2 and the pair turns by the angle
// float(pos) * inv_freq[i]:
//   y[i] = x[i] cos - x[i + D/2] sin,  y[i + D/2] = x[i + D/2] cos + x[i] sin
// Backward applies the transposed rotation (sin negated). Row t's position is pos_offset + t,
// or positions[row] (documents whose positions restart). The cos/sin table of the call's
// positions is built once (T x D/2) and shared by every batch row and head; rows are
// independent, so the result does not depend on the thread count. In place is safe: each
// pair is read before it is written.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

void rope(float* out, const float* inp, const float* inv_freq, int64_t B, int64_t T, int64_t H,
          int64_t Hkv, int64_t D, int64_t pos_offset, const int32_t* positions, int direction) {
  const int64_t half = D / 2, W = (H + 2 * Hkv) * D, rotated = H + Hkv;
  std::vector<float> cos_t(size_t(T * half)), sin_t(size_t(T * half));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = float(pos_offset + t) * inv_freq[i];
      cos_t[size_t(t * half + i)] = std::cos(angle);
      sin_t[size_t(t * half + i)] = float(direction) * std::sin(angle);
    }
#pragma omp parallel for schedule(static) if (B * T * W > (1 << 14))
  for (int64_t row = 0; row < B * T; ++row) {
    // With positions, the table's row p is position p (pos_offset is 0, positions < T).
    const int64_t t = positions ? positions[row] : row % T;
    const float* c = cos_t.data() + t * half;
    const float* s = sin_t.data() + t * half;
    const float* x = inp + row * W;
    float* y = out + row * W;
    for (int64_t h = 0; h < rotated; ++h) {
      const float* xh = x + h * D;
      float* yh = y + h * D;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float a = xh[i], b = xh[i + half];
        yh[i] = a * c[i] - b * s[i];
        yh[i + half] = b * c[i] + a * s[i];
      }
    }
    if (out != inp) std::copy(x + rotated * D, x + W, y + rotated * D);
  }
}

void run(const RopeForwardOp& op) {
  const AttentionDims s = attention_dims(op.inp, op.n_head, op.n_kv_head);
  rope(f32(op.out), f32(op.inp), f32(op.inv_freq), s.B, s.T, s.H, s.Hkv, s.D, op.pos_offset,
       op.positions.defined() ? op.positions.ptr<const int32_t>() : nullptr, 1);
}

void run(const RopeBackwardOp& op) {
  const AttentionDims s = attention_dims(op.dout, op.n_head, op.n_kv_head);
  rope(f32(op.dinp), f32(op.dout), f32(op.inv_freq), s.B, s.T, s.H, s.Hkv, s.D, op.pos_offset,
       op.positions.defined() ? op.positions.ptr<const int32_t>() : nullptr, -1);
}

}  // namespace trainer::cpu
