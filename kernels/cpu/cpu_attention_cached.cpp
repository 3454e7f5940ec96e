// Attention over a KV cache (generation): the new rows' k and v heads are copied into the
// caches (B, Hkv, Tmax, D), then each new query attends to the cached keys it can see. The
// scores of one query are at most Tmax floats, so they are kept whole: max, exp, sum, then the
// weighted sum of the values, in key order. One task per (batch, head, new row): every output
// element has one owner and a fixed summation order, so results do not depend on the thread
// count. Decoding one token is memory-bound on the weights, not here; this loop stays simple.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

void attention_cached(float* out, float* k_cache, float* v_cache, const float* qkv, int64_t B, int64_t T, int64_t H,
                      int64_t Hkv, int64_t D, int64_t t_max, int64_t past) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, group = H / Hkv;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hk = 0; hk < Hkv; ++hk) {
        const float* row = qkv + (b * T + t) * W;
        const int64_t at = ((b * Hkv + hk) * t_max + past + t) * D;
        std::copy(row + C + hk * D, row + C + (hk + 1) * D, k_cache + at);
        std::copy(row + C + (Hkv + hk) * D, row + C + (Hkv + hk + 1) * D, v_cache + at);
      }
#pragma omp parallel
  {
    std::vector<float> s(static_cast<size_t>(past + T));
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t) {
          const float* q = qkv + (b * T + t) * W + h * D;
          const float* keys = k_cache + (b * Hkv + h / group) * t_max * D;
          const float* values = v_cache + (b * Hkv + h / group) * t_max * D;
          const int64_t visible = past + t + 1;
          for (int64_t j = 0; j < visible; ++j) {
            float dot = 0;
#pragma omp simd reduction(+ : dot)
            for (int64_t d = 0; d < D; ++d) dot += q[d] * keys[j * D + d];
            s[j] = dot * scale;
          }
          const float mx = max_of(s.data(), visible);
          float sum = 0;
          for (int64_t j = 0; j < visible; ++j) sum += s[j] = exp_fast(s[j] - mx);
          const float inv = 1.0f / sum;
          float* y = out + (b * T + t) * C + h * D;
          std::fill(y, y + D, 0.0f);
          for (int64_t j = 0; j < visible; ++j) {
            const float p = s[j] * inv;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) y[d] += p * values[j * D + d];
          }
        }
  }
}

void run(const AttentionCachedOp& op) {
  const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
  attention_cached(f32(op.out), f32(op.k_cache), f32(op.v_cache), f32(op.qkv), s.B, s.T, s.H, s.Hkv, s.D,
                   op.k_cache.shape[2], op.past);
}

}  // namespace trainer::cpu
