// Causal self-attention (fast CPU path), flash-style: forward saves only the log-sum-exp of
// each softmax row, backward recomputes the probabilities from q, k and lse, so no (T, T)
// matrix lives between the two. Within a call, queries are processed in blocks of kQueryBlock
// rows against the keys they can see (causal: keys [0, end of block); with documents, from the
// earliest document start of the block's rows, so work the mask hides entirely is skipped), the
// block products
// going through single-threaded sgemm on strided views of qkv (row stride 3*H*D).
// Scratch per thread: two (kQueryBlock, T) tiles.
// Parallelism: forward over (batch, head, query block), backward over (batch, head) because
// dK and dV sum over query blocks; each output element has one owner and a fixed summation
// order, so results do not depend on the thread count. The parallel regions have no `if`
// clause: outside an active region OpenBLAS would thread (and round) by itself.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {

constexpr int64_t kQueryBlock = 64;
constexpr Transpose kN = Transpose::none;
constexpr Transpose kT = Transpose::transpose;

// c (m,n) = alpha * op(a) (m,k) x op(b) (k,n) + beta * c, row-major with leading dimensions.
void gemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta == Transpose::transpose ? CblasTrans : CblasNoTrans,
              tb == Transpose::transpose ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
}

// Turns the scaled scores s (rows i0.., nk columns: keys k0 .. k0 + nk - 1) into probabilities
// exp(s - lse) with the mask applied (0 outside the keys a row sees: doc[r] .. i0 + r, doc[r]
// being its document's start, or k0 without documents). When lse_out is set, computes lse first.
void softmax_rows(float* s, float* lse_out, const float* lse_in, int64_t i0, int64_t nq, int64_t k0, int64_t nk,
                  const int32_t* doc) {
  for (int64_t r = 0; r < nq; ++r) {
    float* row = s + r * nk;
    const int64_t first = doc ? doc[r] - k0 : 0, end = i0 + r + 1 - k0;  // visible: [first, end)
    const int64_t visible = end - first;
    float l;
    if (lse_out) {
      const float mx = max_of(row + first, visible);
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = first; j < end; ++j) sum += exp_fast(row[j] - mx);
      l = mx + std::log(sum);
      lse_out[r] = l;
    } else {
      l = lse_in[r];
    }
    std::fill(row, row + first, 0.0f);
#pragma omp simd
    for (int64_t j = first; j < end; ++j) row[j] = exp_fast(row[j] - l);
    std::fill(row + end, row + nk, 0.0f);
  }
}

// The first key any of rows i0 .. i0 + nq - 1 sees: 0, or the earliest of their documents'
// starts (the keys before it are hidden from the whole block and never computed).
int64_t first_key(const int32_t* doc, int64_t nq) {
  if (!doc) return 0;
  int64_t k0 = doc[0];
  for (int64_t r = 1; r < nq; ++r) k0 = std::min<int64_t>(k0, doc[r]);
  return k0;
}

}  // namespace

void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T, int64_t H,
                       int64_t Hkv, int64_t D, const int32_t* doc_start) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, group = H / Hkv;
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t qblocks = (T + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = B * H * qblocks;
#pragma omp parallel
  {
    std::vector<float> s(static_cast<size_t>(std::min(kQueryBlock, T) * T));
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / (H * qblocks);
      const int64_t h = (task / qblocks) % H;
      const int64_t hk = h / group;
      const int64_t i0 = (task % qblocks) * kQueryBlock;
      const int64_t nq = std::min(kQueryBlock, T - i0);
      const int32_t* doc = doc_start ? doc_start + b * T + i0 : nullptr;
      const int64_t k0 = first_key(doc, nq), nk = i0 + nq - k0;
      const float* q = qkv + (b * T + i0) * W + h * D;
      const float* k = qkv + (b * T + k0) * W + C + hk * D;
      const float* v = qkv + (b * T + k0) * W + C + Hkv * D + hk * D;
      gemm(kN, kT, nq, nk, D, scale, q, W, k, W, 0.0f, s.data(), nk);
      softmax_rows(s.data(), lse + (b * H + h) * T + i0, nullptr, i0, nq, k0, nk, doc);
      gemm(kN, kN, nq, D, nk, 1.0f, s.data(), nk, v, W, 0.0f, out + (b * T + i0) * C + h * D, C);
    }
  }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                        const int32_t* doc_start) {
  const int64_t C = H * D, W = (H + 2 * Hkv) * D, group = H / Hkv;
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t tasks = B * Hkv;
#pragma omp parallel
  {
    const size_t tile = static_cast<size_t>(std::min(kQueryBlock, T) * T);
    std::vector<float> p(tile);
    std::vector<float> dp(tile);
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / Hkv;
      const int64_t hk = task % Hkv;
      const float* k = qkv + b * T * W + C + hk * D;
      const float* v = qkv + b * T * W + C + Hkv * D + hk * D;
      float* dk = dqkv + b * T * W + C + hk * D;
      float* dv = dqkv + b * T * W + C + Hkv * D + hk * D;
      for (int64_t t = 0; t < T; ++t) {
        std::fill(dk + t * W, dk + t * W + D, 0.0f);
        std::fill(dv + t * W, dv + t * W + D, 0.0f);
      }
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t i0 = 0; i0 < T; i0 += kQueryBlock) {
          const int64_t nq = std::min(kQueryBlock, T - i0);
          const int32_t* doc = doc_start ? doc_start + b * T + i0 : nullptr;
          const int64_t k0 = first_key(doc, nq), nk = i0 + nq - k0;
          const float* q = qkv + (b * T + i0) * W + h * D;
          const float* dO = dout + (b * T + i0) * C + h * D;
          const float* O = out + (b * T + i0) * C + h * D;
          float* dq = dqkv + (b * T + i0) * W + h * D;
          const float* kb = k + k0 * W;
          const float* vb = v + k0 * W;
          gemm(kN, kT, nq, nk, D, scale, q, W, kb, W, 0.0f, p.data(), nk);
          softmax_rows(p.data(), nullptr, lse + (b * H + h) * T + i0, i0, nq, k0, nk, doc);
          gemm(kN, kT, nq, nk, D, 1.0f, dO, C, vb, W, 0.0f, dp.data(), nk);
          // dS = P * (dP - rowsum(dO * O)) * scale; masked entries have P = 0.
          for (int64_t r = 0; r < nq; ++r) {
            float di = 0;
#pragma omp simd reduction(+ : di)
            for (int64_t d = 0; d < D; ++d) di += dO[r * C + d] * O[r * C + d];
            float* ds = dp.data() + r * nk;
            const float* pr = p.data() + r * nk;
#pragma omp simd
            for (int64_t j = 0; j < nk; ++j) ds[j] = pr[j] * (ds[j] - di) * scale;
          }
          gemm(kN, kN, nq, D, nk, 1.0f, dp.data(), nk, kb, W, 0.0f, dq, W);
          gemm(kT, kN, nk, D, nq, 1.0f, dp.data(), nk, q, W, 1.0f, dk + k0 * W, W);
          gemm(kT, kN, nk, D, nq, 1.0f, p.data(), nk, dO, C, 1.0f, dv + k0 * W, W);
        }
      }
    }
  }
}

void run(const AttentionForwardOp& op) {
  const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
  attention_forward(f32(op.out), f32(op.lse), f32(op.qkv), s.B, s.T, s.H, s.Hkv, s.D,
                    op.doc_start.defined() ? op.doc_start.ptr<const int32_t>() : nullptr);
}

void run(const AttentionBackwardOp& op) {
  const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
  attention_backward(f32(op.dqkv), f32(op.dout), f32(op.qkv), f32(op.out), f32(op.lse), s.B, s.T, s.H, s.Hkv, s.D,
                     op.doc_start.defined() ? op.doc_start.ptr<const int32_t>() : nullptr);
}

}  // namespace trainer::cpu
