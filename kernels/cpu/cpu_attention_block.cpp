// Ring attention's block ops (fast CPU path; see backend_attention_block_ops.h). Rows are
// matched to keys by position, so the loops visit each (query, key) pair and skip the hidden
// ones; the forward keeps one row's scores at a time (memory linear in the block's keys).
// Parallelism: forward over (batch, head, query row), backward over (batch, k/v head), since
// dK and dV sum over the group's query heads and rows; each output element has one owner and a
// fixed summation order, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {

struct BlockDims {
  int64_t B, Tq, Tk, H, Hkv, D;
};

BlockDims block_dims(const Tensor& qkv, const Tensor& kv, int n_head, int n_kv_head) {
  const AttentionDims s = attention_dims(qkv, n_head, n_kv_head);
  return {s.B, s.T, kv.shape[1], s.H, s.Hkv, s.D};
}

inline bool visible(int32_t kp, int32_t qp, const int32_t* q_doc, int64_t row) {
  return kp <= qp && (!q_doc || kp >= q_doc[row]);
}

}  // namespace

void run(const AttentionBlockForwardOp& op) {
  const BlockDims s = block_dims(op.qkv, op.kv, op.n_head, op.n_kv_head);
  const int64_t C = s.H * s.D, W = (s.H + 2 * s.Hkv) * s.D, Wkv = 2 * s.Hkv * s.D, group = s.H / s.Hkv;
  const float scale = 1.0f / std::sqrt(float(s.D));
  const float *qkv = f32(op.qkv), *kv = f32(op.kv);
  const int32_t *q_pos = i32(op.q_pos), *k_pos = i32(op.k_pos), *q_doc = i32(op.q_doc);
  float *out = f32(op.out), *lse = f32(op.lse);
  const int64_t tasks = s.B * s.H * s.Tq;
#pragma omp parallel
  {
    std::vector<float> sc(size_t(s.Tk)), o(size_t(s.D));
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / (s.H * s.Tq), h = (task / s.Tq) % s.H, i = task % s.Tq, row = b * s.Tq + i;
      const int64_t koff = (h / group) * s.D, voff = s.Hkv * s.D + (h / group) * s.D;
      const float* q = qkv + row * W + h * s.D;
      const int32_t* kp = k_pos + b * s.Tk;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < s.Tk; ++j) {
        if (!visible(kp[j], q_pos[row], q_doc, row)) continue;
        const float* k = kv + (b * s.Tk + j) * Wkv + koff;
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < s.D; ++d) dot += q[d] * k[d];
        sc[size_t(j)] = dot * scale;
        mx = std::max(mx, sc[size_t(j)]);
      }
      if (mx == -std::numeric_limits<float>::infinity()) continue;  // no key of this block
      std::fill(o.begin(), o.end(), 0.0f);
      float sum = 0;
      for (int64_t j = 0; j < s.Tk; ++j) {
        if (!visible(kp[j], q_pos[row], q_doc, row)) continue;
        const float p = exp_fast(sc[size_t(j)] - mx);
        sum += p;
        const float* v = kv + (b * s.Tk + j) * Wkv + voff;
#pragma omp simd
        for (int64_t d = 0; d < s.D; ++d) o[size_t(d)] += p * v[d];
      }
      const float l_blk = mx + std::log(sum);
      float& l = lse[(b * s.H + h) * s.Tq + i];
      const bool empty = l == -std::numeric_limits<float>::infinity();
      const float top = empty ? l_blk : std::max(l, l_blk);
      const float l_new = empty ? l_blk : top + std::log(std::exp(l - top) + std::exp(l_blk - top));
      const float keep = empty ? 0.0f : std::exp(l - l_new), take = std::exp(l_blk - l_new) / sum;
      float* dst = out + row * C + h * s.D;
      for (int64_t d = 0; d < s.D; ++d) dst[d] = dst[d] * keep + o[size_t(d)] * take;
      l = l_new;
    }
  }
}

void run(const AttentionBlockBackwardOp& op) {
  const BlockDims s = block_dims(op.qkv, op.kv, op.n_head, op.n_kv_head);
  const int64_t C = s.H * s.D, W = (s.H + 2 * s.Hkv) * s.D, Wkv = 2 * s.Hkv * s.D, group = s.H / s.Hkv;
  const float scale = 1.0f / std::sqrt(float(s.D));
  const float *qkv = f32(op.qkv), *kv = f32(op.kv), *dout = f32(op.dout), *out = f32(op.out), *lse = f32(op.lse);
  const int32_t *q_pos = i32(op.q_pos), *k_pos = i32(op.k_pos), *q_doc = i32(op.q_doc);
  float *dq = f32(op.dq), *dkv = f32(op.dkv);
  const int64_t tasks = s.B * s.Hkv;
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t b = task / s.Hkv, hk = task % s.Hkv;
    const int32_t* kp = k_pos + b * s.Tk;
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
      for (int64_t i = 0; i < s.Tq; ++i) {
        const int64_t row = b * s.Tq + i;
        const float* q = qkv + row * W + h * s.D;
        const float* dO = dout + row * C + h * s.D;
        const float* O = out + row * C + h * s.D;
        const float l = lse[(b * s.H + h) * s.Tq + i];
        float dvec = 0;
        for (int64_t d = 0; d < s.D; ++d) dvec += dO[d] * O[d];
        float* dqr = dq + row * C + h * s.D;
        for (int64_t j = 0; j < s.Tk; ++j) {
          if (!visible(kp[j], q_pos[row], q_doc, row)) continue;
          const float* k = kv + (b * s.Tk + j) * Wkv + hk * s.D;
          const float* v = kv + (b * s.Tk + j) * Wkv + s.Hkv * s.D + hk * s.D;
          float dot = 0, dp = 0;
#pragma omp simd reduction(+ : dot, dp)
          for (int64_t d = 0; d < s.D; ++d) {
            dot += q[d] * k[d];
            dp += dO[d] * v[d];
          }
          const float p = exp_fast(dot * scale - l);
          const float ds = p * (dp - dvec) * scale;
          float* dk = dkv + (b * s.Tk + j) * Wkv + hk * s.D;
          float* dv = dkv + (b * s.Tk + j) * Wkv + s.Hkv * s.D + hk * s.D;
#pragma omp simd
          for (int64_t d = 0; d < s.D; ++d) {
            dqr[d] += ds * k[d];
            dk[d] += ds * q[d];
            dv[d] += p * dO[d];
          }
        }
      }
  }
}

}  // namespace trainer::cpu
