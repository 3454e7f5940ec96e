// The reference loops of ring attention's block ops (AttentionBlockForwardOp,
// AttentionBlockBackwardOp): literal definitions, single thread, that
// tests/kernels/test_cpu_attention_block.cpp holds the fast kernels to. Templates over the float
// type F; pointers contiguous row-major, shapes those of the ops' structs; q_doc may be null.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace trainer::ref {

// Whether key position kp is visible to a query at qp whose document starts at qd.
inline bool block_visible(int32_t kp, int32_t qp, const int32_t* q_doc, int64_t row) {
  return kp <= qp && (!q_doc || kp >= q_doc[row]);
}

// out (B,Tq,H*D) and lse (B,H,Tq) merged with the block's attention; qkv (B,Tq,(H+2Hkv)*D),
// kv (B,Tk,2*Hkv*D).
template <class F>
void attention_block_forward(F* out, F* lse, const F* qkv, const F* kv, const int32_t* q_pos, const int32_t* k_pos,
                             const int32_t* q_doc, int64_t B, int64_t Tq, int64_t Tk, int64_t H, int64_t Hkv,
                             int64_t D) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, Wkv = 2 * Hkv * D, group = H / Hkv;
  const F scale = F(1) / std::sqrt(F(D));
  std::vector<F> s(static_cast<size_t>(Tk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t koff = (h / group) * D, voff = Hkv * D + (h / group) * D;
      for (int64_t i = 0; i < Tq; ++i) {
        const int64_t row = b * Tq + i;
        const F* q = qkv + row * W + h * D;
        F mx = -std::numeric_limits<F>::infinity();
        bool any = false;
        for (int64_t j = 0; j < Tk; ++j) {
          if (!block_visible(k_pos[b * Tk + j], q_pos[row], q_doc, row)) continue;
          const F* k = kv + (b * Tk + j) * Wkv + koff;
          F dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * k[d];
          s[size_t(j)] = dot * scale;
          mx = std::max(mx, s[size_t(j)]);
          any = true;
        }
        if (!any) continue;
        F sum = 0;
        std::vector<F> o(static_cast<size_t>(D), F(0));
        for (int64_t j = 0; j < Tk; ++j) {
          if (!block_visible(k_pos[b * Tk + j], q_pos[row], q_doc, row)) continue;
          const F p = std::exp(s[size_t(j)] - mx);
          sum += p;
          const F* v = kv + (b * Tk + j) * Wkv + voff;
          for (int64_t d = 0; d < D; ++d) o[size_t(d)] += p * v[d];
        }
        const F l_blk = mx + std::log(sum);
        F& l = lse[(b * H + h) * Tq + i];
        const F l_new = l == -std::numeric_limits<F>::infinity()
                            ? l_blk
                            : std::max(l, l_blk) + std::log(std::exp(l - std::max(l, l_blk)) +
                                                            std::exp(l_blk - std::max(l, l_blk)));
        F* dst = out + row * C + h * D;
        const F keep = l == -std::numeric_limits<F>::infinity() ? F(0) : std::exp(l - l_new);
        const F take = std::exp(l_blk - l_new) / sum;
        for (int64_t d = 0; d < D; ++d) dst[d] = dst[d] * keep + o[size_t(d)] * take;
        l = l_new;
      }
    }
}

// dq (B,Tq,H*D) +=, dkv (B,Tk,2*Hkv*D) +=; out, lse the merged forward's.
template <class F>
void attention_block_backward(F* dq, F* dkv, const F* dout, const F* qkv, const F* kv, const F* out, const F* lse,
                              const int32_t* q_pos, const int32_t* k_pos, const int32_t* q_doc, int64_t B, int64_t Tq,
                              int64_t Tk, int64_t H, int64_t Hkv, int64_t D) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, Wkv = 2 * Hkv * D, group = H / Hkv;
  const F scale = F(1) / std::sqrt(F(D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t koff = (h / group) * D, voff = Hkv * D + (h / group) * D;
      for (int64_t i = 0; i < Tq; ++i) {
        const int64_t row = b * Tq + i;
        const F* q = qkv + row * W + h * D;
        const F* dO = dout + row * C + h * D;
        const F* O = out + row * C + h * D;
        const F l = lse[(b * H + h) * Tq + i];
        F dvec = 0;
        for (int64_t d = 0; d < D; ++d) dvec += dO[d] * O[d];
        for (int64_t j = 0; j < Tk; ++j) {
          if (!block_visible(k_pos[b * Tk + j], q_pos[row], q_doc, row)) continue;
          const F* k = kv + (b * Tk + j) * Wkv + koff;
          const F* v = kv + (b * Tk + j) * Wkv + voff;
          F dot = 0, dp = 0;
          for (int64_t d = 0; d < D; ++d) {
            dot += q[d] * k[d];
            dp += dO[d] * v[d];
          }
          const F p = std::exp(dot * scale - l);
          const F ds = p * (dp - dvec) * scale;
          F* dk = dkv + (b * Tk + j) * Wkv + koff;
          F* dv = dkv + (b * Tk + j) * Wkv + voff;
          for (int64_t d = 0; d < D; ++d) {
            dq[row * C + h * D + d] += ds * k[d];
            dk[d] += ds * q[d];
            dv[d] += p * dO[d];
          }
        }
      }
    }
}

}  // namespace trainer::ref
