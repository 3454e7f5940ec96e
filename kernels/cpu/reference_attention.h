// The reference loops of causal attention (AttentionForwardOp, AttentionBackwardOp), with the
// document mask when doc_start is given (query i of row b sees keys doc_start[b*T+i] .. i): literal
// definitions, single thread, that tests/kernels/test_cpu_attention.cpp holds the fast kernels
// to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace trainer::ref {

// Causal attention, scale 1/sqrt(D), query head h reading k/v head h / (H / Hkv).
// qkv (B,T,(H+2*Hkv)*D) as [q heads | k heads | v heads]; out (B,T,H*D); lse (B,H,T).
template <class F>
void attention_forward(F* out, F* lse, const F* qkv, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                       const int32_t* doc_start = nullptr) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, group = H / Hkv;
  const F scale = F(1) / std::sqrt(F(D));
  std::vector<F> s(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t koff = C + (h / group) * D, voff = C + Hkv * D + (h / group) * D;
      for (int64_t i = 0; i < T; ++i) {
        const F* q = qkv + (b * T + i) * W + h * D;
        const int64_t lo = doc_start ? doc_start[b * T + i] : 0;
        F mx = -std::numeric_limits<F>::infinity();
        for (int64_t j = lo; j <= i; ++j) {
          const F* k = qkv + (b * T + j) * W + koff;
          F dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * k[d];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        F sum = 0;
        for (int64_t j = lo; j <= i; ++j) sum += std::exp(s[j] - mx);
        const F l = mx + std::log(sum);
        lse[(b * H + h) * T + i] = l;
        F* o = out + (b * T + i) * C + h * D;
        for (int64_t d = 0; d < D; ++d) o[d] = 0;
        for (int64_t j = lo; j <= i; ++j) {
          const F p = std::exp(s[j] - l);
          const F* v = qkv + (b * T + j) * W + voff;
          for (int64_t d = 0; d < D; ++d) o[d] += p * v[d];
        }
      }
    }
  }
}

// dqkv (B,T,(H+2*Hkv)*D) overwritten. Recomputes the probabilities from q, k and lse.
template <class F>
void attention_backward(F* dqkv, const F* dout, const F* qkv, const F* lse, int64_t B, int64_t T,
                        int64_t H, int64_t Hkv, int64_t D, const int32_t* doc_start = nullptr) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, group = H / Hkv;
  const F scale = F(1) / std::sqrt(F(D));
  std::fill(dqkv, dqkv + B * T * W, F(0));
  std::vector<F> p(static_cast<size_t>(T));
  std::vector<F> dp(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t koff = C + (h / group) * D, voff = C + Hkv * D + (h / group) * D;
      for (int64_t i = 0; i < T; ++i) {
        const F* q = qkv + (b * T + i) * W + h * D;
        const F* dO = dout + (b * T + i) * C + h * D;
        const F l = lse[(b * H + h) * T + i];
        const int64_t lo = doc_start ? doc_start[b * T + i] : 0;
        F p_dp = 0;  // sum_j p_ij dp_ij
        for (int64_t j = lo; j <= i; ++j) {
          const F* k = qkv + (b * T + j) * W + koff;
          const F* v = qkv + (b * T + j) * W + voff;
          F dot = 0;
          F dv_dot = 0;
          for (int64_t d = 0; d < D; ++d) {
            dot += q[d] * k[d];
            dv_dot += dO[d] * v[d];
          }
          p[j] = std::exp(dot * scale - l);
          dp[j] = dv_dot;
          p_dp += p[j] * dp[j];
        }
        F* dq = dqkv + (b * T + i) * W + h * D;
        for (int64_t j = lo; j <= i; ++j) {
          const F ds = p[j] * (dp[j] - p_dp) * scale;
          const F* k = qkv + (b * T + j) * W + koff;
          F* dk = dqkv + (b * T + j) * W + koff;
          F* dv = dqkv + (b * T + j) * W + voff;
          for (int64_t d = 0; d < D; ++d) {
            dq[d] += ds * k[d];
            dk[d] += ds * q[d];
            dv[d] += p[j] * dO[d];
          }
        }
      }
    }
  }
}

}  // namespace trainer::ref
