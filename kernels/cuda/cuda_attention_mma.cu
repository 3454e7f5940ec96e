// Tensor-core flash attention for bf16, head_dim 64 or 128 (sm_80+: mma.sync m16n8k16 bf16
// with f32 accumulators; fragments and ldmatrix in cuda_mma.cuh, tile streaming and
// warp products in cuda_attention_tiles.cuh). A block of 4 warps owns the
// rows (queries, or keys in dK/dV) of one (batch, head); each warp owns kM m16 blocks of them,
// kM = 2 at D = 64 (FlashAttention-2's 128-row tile: every fragment read from shared memory
// feeds two products, halving the shared-memory traffic that bounds these kernels) and 1 at
// D = 128, where two blocks' accumulators would not fit in registers. Tiles move global ->
// shared memory with cp.async in 16-byte pieces, rows padded by 8 elements (16 bytes) so the
// ldmatrix loads are free of bank conflicts; every kernel streams the tiles it walks (K/V in
// forward and dQ, Q/dO in dK/dV) through two buffers (TileRing), the next tile's copy running
// while the current one is used. The accumulators of two adjacent n-tiles are, packed to
// bf16, the A fragment of the next product (P V, dS K, ...): probabilities never leave
// registers.
// Forward: online softmax in the log2 domain (scores pre-multiplied by log2(e) / sqrt(D)); the
// query fragments stay in registers.
// Backward: dQ kernel over query tiles, dK/dV kernel over key tiles of a k/v head, walking
// the query heads of its group in order (no atomics).
// Results do not depend on kM, nor on the backward's tile sizes: every row meets its 16-wide
// chunks of the other side in the same ascending order, and chunks past the causal diagonal
// add exact zeros. The forward's key tile (kTile) does matter: the online softmax rescales per
// tile. For the same reason a warp skips every tile that is past the diagonal for all its rows
// (keys, in dK/dV), and all tiles when its rows lie past T: there the forward's update is the
// identity (the row max stays, its correction is exp2(0) = 1, P = 0) and the backward's adds
// zeros, so skipping changes no value (at most the sign of an exact zero). A skipping warp still
// takes its share of every tile's copies and reaches the same barriers. At T = 1024 that is 5.6%
// of the forward's products and 8.3% of the backward's (D = 64).
#include <climits>
#include <cmath>
#include <string>

#include "kernels/cuda/cuda_attention.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_attention_tiles.cuh"

namespace trainer::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kTile = 64;  // key tile of the forward; keys or queries per block at kM = 1
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// kM m16 row blocks per warp (16 kM query rows): each K/V fragment loaded from shared memory
// feeds kM products, so kM = 2 halves the shared-memory traffic per FLOP, the bound of this
// kernel at kM = 1 (FlashAttention-2's 128-row tile). Each row sees the key tiles in the same
// order for any kM (tiles past a row's diagonal are fully masked and add exact zeros), so the
// result does not depend on kM.
template <int D, int kM>
__global__ void __launch_bounds__(kThreads) attention_forward_mma_kernel(bf16* out, float* lse, const bf16* qkv,
                                                                         int T_len, int H, int Hkv,
                                                                         float scale_log2) {
  constexpr int LD = D + 8;
  constexpr int kRows = kWarps * 16 * kM;  // query rows per block
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* Qs = reinterpret_cast<bf16*>(smem_raw);
  const int qt = gridDim.x - 1 - blockIdx.x;  // longest rows first
  const int b = blockIdx.y / H, h = blockIdx.y % H;
  const QkvLayout L{H, Hkv, D};
  const int64_t s3 = L.row(), hd = L.out_row();
  const HeadRows<bf16> rows_bh = head_rows(L, qkv, T_len, b, h);
  const TileRing<D, kTile> kv{Qs + kRows * LD};  // (K, V) tiles
  const int q0 = qt * kRows;
  const int last = min(q0 + kRows - 1, T_len - 1) / kTile;  // the last key tile any row sees
  load_tile_async<D>(Qs, LD, rows_bh.q, s3, kRows, q0, T_len);
  kv.issue(0, rows_bh.k, s3, rows_bh.v, s3, 0, T_len);  // one group: Q and the first (K, V)
  const int warp = threadIdx.x / 32, t = threadIdx.x % 4;  // t: lane % 4, a fragment column pair
  const int wr = warp * 16 * kM;
  int rows[kM][2];
  warp_rows<kM>(rows, q0 + wr);
  // Tile 1 goes in flight before the wait for Q, so the first two tiles' copies overlap.
  if (last > 0) kv.issue(1, rows_bh.k, s3, rows_bh.v, s3, kTile, T_len);
  kv.wait(last > 0);
  uint32_t qa[kM][D / 16][4];
  load_a_rows<D, kM>(qa, Qs, LD, wr);
  float o[kM][D / 8][4] = {};
  float m[kM][2], l[kM][2];
#pragma unroll
  for (int a = 0; a < kM; ++a) {
    m[a][0] = m[a][1] = -INFINITY;
    l[a][0] = l[a][1] = 0.0f;
  }
  const int warp_end = warp_last_tile(q0 + wr, 16 * kM, kTile, last, T_len);
  for (int kt = 0; kt <= last; ++kt) {
    const int k0 = kt * kTile;
    kv.arrive(kt, last, rows_bh.k, s3, rows_bh.v, s3, T_len);
    // Past its last tile (warp_last_tile), a warp takes its share of the copies and the barriers only.
    if (kt <= warp_end) {
      const bf16* Ks = kv.first(kt);
      const bf16* Vs = kv.second(kt);
      float s[kM][kTile / 8][4] = {};
      gemm_ayt<D, kTile, kM>(s, qa, Ks, LD);
#pragma unroll
      for (int a = 0; a < kM; ++a) {
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < kTile / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + nt * 8 + 2 * t + (e & 1);
            const float v = (key > rows[a][e / 2] || key >= T_len) ? -INFINITY : s[a][nt][e] * scale_log2;
            s[a][nt][e] = v;
            mx[e / 2] = fmaxf(mx[e / 2], v);
          }
        float corr[2], base[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
          const float m_new = fmaxf(m[a][r], mx[r]);
          base[r] = m_new == -INFINITY ? 0.0f : m_new;  // a fully masked row stays all zero
          corr[r] = exp2f(m[a][r] - base[r]);
          m[a][r] = m_new;
          l[a][r] *= corr[r];
        }
#pragma unroll
        for (int nt = 0; nt < kTile / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            s[a][nt][e] = exp2f(s[a][nt][e] - base[e / 2]);
            l[a][e / 2] += s[a][nt][e];
          }
#pragma unroll
        for (int dn = 0; dn < D / 8; ++dn) {
          o[a][dn][0] *= corr[0];
          o[a][dn][1] *= corr[0];
          o[a][dn][2] *= corr[1];
          o[a][dn][3] *= corr[1];
        }
      }
      gemm_pz<D, kTile, kM>(o, s, Vs, LD);
    }
    kv.release();
  }
#pragma unroll
  for (int a = 0; a < kM; ++a)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = l[a][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      if (rows[a][r] >= T_len) continue;
      const float inv = 1.0f / sum;
      bf16* dst = out + (int64_t(b) * T_len + rows[a][r]) * hd + L.q_col(h) + 2 * t;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn)
        *reinterpret_cast<uint32_t*>(dst + dn * 8) = pack_f32(o[a][dn][2 * r] * inv, o[a][dn][2 * r + 1] * inv);
      if (t == 0) lse[(int64_t(b) * H + h) * T_len + rows[a][r]] = (m[a][r] + log2f(sum)) * kLn2;
    }
}

// dQ over the key tiles of each query block. kBk: keys per streamed tile; kM: m16 query blocks
// per warp (each K/V fragment then feeds kM products). D = 64 takes kBk = 32, kM = 2 and D = 128
// kBk = 64, kM = 1 (32 where its 104 KB of shared memory do not fit: backward_d), which keep dQ,
// S and dP within registers. Every query row sees the 16-key chunks in the same ascending order
// for any kBk and kM (chunks past its diagonal are fully masked and add exact zeros), so dQ does
// not depend on them.
template <int D, int kBk, int kM>
__global__ void __launch_bounds__(kThreads) attention_dq_mma_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv,
                                                                    const float* lse, const float* dvec, int T_len,
                                                                    int H, int Hkv, float scale, float scale_log2) {
  constexpr int LD = D + 8;
  constexpr int kRows = kWarps * 16 * kM;  // query rows per block
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* Qs = reinterpret_cast<bf16*>(smem_raw);
  bf16* dOs = Qs + kRows * LD;
  const int qt = gridDim.x - 1 - blockIdx.x;
  const int b = blockIdx.y / H, h = blockIdx.y % H;
  const QkvLayout L{H, Hkv, D};
  const int64_t s3 = L.row(), hd = L.out_row();
  const HeadRows<bf16> rows_bh = head_rows(L, qkv, T_len, b, h);
  const TileRing<D, kBk> kv{dOs + kRows * LD};  // (K, V) tiles
  const int q0 = qt * kRows;
  const int last = min(q0 + kRows - 1, T_len - 1) / kBk;  // the last key tile any row sees
  load_tile_async<D>(Qs, LD, rows_bh.q, s3, kRows, q0, T_len);
  load_tile_async<D>(dOs, LD, dout + int64_t(b) * T_len * hd + L.q_col(h), hd, kRows, q0, T_len);
  kv.issue(0, rows_bh.k, s3, rows_bh.v, s3, 0, T_len);  // one group: Q, dO and the first (K, V)
  const int warp = threadIdx.x / 32, t = threadIdx.x % 4;  // t: lane % 4, a fragment column pair
  const int wr = warp * 16 * kM;
  int rows[kM][2];
  warp_rows<kM>(rows, q0 + wr);
  float row_lse[kM][2], row_d[kM][2];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const bool ok = rows[m][r] < T_len;
      row_lse[m][r] = ok ? lse[(int64_t(b) * H + h) * T_len + rows[m][r]] * kLog2e : 0.0f;
      row_d[m][r] = ok ? dvec[(int64_t(b) * H + h) * T_len + rows[m][r]] : 0.0f;
    }
  // Q's and dO's fragments stay in registers for every key tile (tile 1 in flight meanwhile).
  if (last > 0) kv.issue(1, rows_bh.k, s3, rows_bh.v, s3, kBk, T_len);
  kv.wait(last > 0);
  uint32_t qa[kM][D / 16][4], da[kM][D / 16][4];
  load_a_rows<D, kM>(qa, Qs, LD, wr);
  load_a_rows<D, kM>(da, dOs, LD, wr);
  float dq[kM][D / 8][4] = {};
  const int warp_end = warp_last_tile(q0 + wr, 16 * kM, kBk, last, T_len);
  for (int kt = 0; kt <= last; ++kt) {
    const int k0 = kt * kBk;
    kv.arrive(kt, last, rows_bh.k, s3, rows_bh.v, s3, T_len);
    // Past its last tile, a warp takes its share of the copies and the barriers only.
    if (kt <= warp_end) {
      const bf16* Ks = kv.first(kt);
      const bf16* Vs = kv.second(kt);
      float s[kM][kBk / 8][4] = {}, dp[kM][kBk / 8][4] = {};
      gemm_ayt<D, kBk, kM>(s, qa, Ks, LD);
      gemm_ayt<D, kBk, kM>(dp, da, Vs, LD);
#pragma unroll
      for (int m = 0; m < kM; ++m)
#pragma unroll
        for (int nt = 0; nt < kBk / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + nt * 8 + 2 * t + (e & 1);
            const int r = e / 2;
            const bool ok = key <= rows[m][r] && key < T_len && rows[m][r] < T_len;
            const float p = ok ? exp2f(s[m][nt][e] * scale_log2 - row_lse[m][r]) : 0.0f;
            s[m][nt][e] = p * (dp[m][nt][e] - row_d[m][r]);  // dS
          }
      gemm_pz<D, kBk, kM>(dq, s, Ks, LD);
    }
    kv.release();
  }
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (rows[m][r] >= T_len) continue;
      bf16* dst = dqkv + (int64_t(b) * T_len + rows[m][r]) * s3 + L.q_col(h) + 2 * t;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn)
        *reinterpret_cast<uint32_t*>(dst + dn * 8) =
            pack_f32(dq[m][dn][2 * r] * scale, dq[m][dn][2 * r + 1] * scale);
    }
}

// One block per (batch, k/v head, key tile); dK and dV sum over the group's query heads in
// head order, then over the query tiles of each. kBq: queries per streamed tile; kM: m16 key
// blocks per warp (as in the forward, each Q/dO fragment then feeds kM products). D = 64 takes
// kBq = 32, kM = 2 and D = 128 kBq = 32, kM = 1, which keep dK, dV, S and dP within registers.
// Every key sees the 16-query chunks in the same ascending order for any kBq and kM (chunks
// before its diagonal are fully masked and add exact zeros), so the sums do not depend on them.
template <int D, int kBq, int kM>
__global__ void __launch_bounds__(kThreads) attention_dkv_mma_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv,
                                                                     const float* lse, const float* dvec, int T_len,
                                                                     int H, int Hkv, float scale, float scale_log2) {
  constexpr int LD = D + 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kKeys = kWarps * 16 * kM;  // keys per block
  bf16* Ks = reinterpret_cast<bf16*>(smem_raw);
  bf16* Vs = Ks + kKeys * LD;
  const TileRing<D, kBq> qdo{Vs + kKeys * LD};                          // (Q, dO) tiles
  float* stats_s = reinterpret_cast<float*>(Vs + kKeys * LD + 4 * kBq * LD);  // 2 x (lse, dvec) rows
  const int b = blockIdx.y / Hkv, kvh = blockIdx.y % Hkv;
  const int k0 = blockIdx.x * kKeys;  // smallest keys (most queries) first
  const QkvLayout L{H, Hkv, D};
  const int64_t s3 = L.row(), hd = L.out_row();
  const bf16* rows_b = qkv + int64_t(b) * T_len * s3;
  // Iteration i: query head kvh * group + i / q_tiles, queries k0 + (i % q_tiles) * kBq.. .
  const int q_tiles = (T_len - k0 + kBq - 1) / kBq, iterations = L.group() * q_tiles;
  auto head_of = [&](int i) { return kvh * L.group() + i / q_tiles; };
  auto q0_of = [&](int i) { return k0 + (i % q_tiles) * kBq; };
  // Pair i's rows of lse and dvec and its (Q, dO) tiles, as one cp.async group (zero past T).
  auto issue = [&](int i) {
    const int h = head_of(i), q0 = q0_of(i);
    float* lse_s = stats_s + (i % 2) * 2 * kBq;
    const float* lse_bh = lse + (int64_t(b) * H + h) * T_len;
    const float* dvec_bh = dvec + (int64_t(b) * H + h) * T_len;
    for (int j = threadIdx.x; j < kBq; j += blockDim.x) {
      const bool ok = q0 + j < T_len;
      cp_async4(lse_s + j, lse_bh + (ok ? q0 + j : 0), ok);
      cp_async4(lse_s + kBq + j, dvec_bh + (ok ? q0 + j : 0), ok);
    }
    qdo.issue(i, rows_b + L.q_col(h), s3, dout + int64_t(b) * T_len * hd + L.q_col(h), hd, q0, T_len);
  };
  load_tile_async<D>(Ks, LD, rows_b + L.k_col(kvh), s3, kKeys, k0, T_len);
  load_tile_async<D>(Vs, LD, rows_b + L.v_col(kvh), s3, kKeys, k0, T_len);
  issue(0);  // one group: K, V and the first (Q, dO)
  const int warp = threadIdx.x / 32, t = threadIdx.x % 4;  // t: lane % 4, a fragment column pair
  const int wr = warp * 16 * kM;
  int keys[kM][2];
  warp_rows<kM>(keys, k0 + wr);
  // Queries before the warp's first key see none of its keys; a warp with no key inside T skips all.
  const int warp_first = k0 + wr < T_len ? k0 + wr : INT_MAX;
  float dk[kM][D / 8][4] = {};
  float dv[kM][D / 8][4] = {};
  for (int i = 0; i < iterations; ++i) {
    const int q0 = q0_of(i);
    const bool more = i + 1 < iterations;
    if (more) issue(i + 1);
    TileRing<D, kBq>::wait(more);
    if (q0 + kBq - 1 >= warp_first) {
      const bf16* Qs = qdo.first(i);
      const bf16* dOs = qdo.second(i);
      const float* lse_s = stats_s + (i % 2) * 2 * kBq;
      const float* dvec_s = lse_s + kBq;
      float pt[kM][kBq / 8][4] = {};   // S^T, then P^T (keys x queries)
      float dst[kM][kBq / 8][4] = {};  // dP^T, then dS^T
      gemm_xyt<D, kBq, kM>(pt, Ks, Qs, LD, wr);
      gemm_xyt<D, kBq, kM>(dst, Vs, dOs, LD, wr);
#pragma unroll
      for (int m = 0; m < kM; ++m)
#pragma unroll
        for (int nt = 0; nt < kBq / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int ql = nt * 8 + 2 * t + (e & 1);
            const int q = q0 + ql;
            const int key = keys[m][e / 2];
            const bool ok = q >= key && q < T_len && key < T_len;
            // __fmul_rn: the log2-domain lse is the rounded product, never contracted into an fma.
            const float p = ok ? exp2f(pt[m][nt][e] * scale_log2 - __fmul_rn(lse_s[ql], kLog2e)) : 0.0f;
            pt[m][nt][e] = p;
            dst[m][nt][e] = p * (dst[m][nt][e] - dvec_s[ql]);
          }
      gemm_pz<D, kBq, kM>(dv, pt, dOs, LD);
      gemm_pz<D, kBq, kM>(dk, dst, Qs, LD);
    }
    TileRing<D, kBq>::release();
  }
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (keys[m][r] >= T_len) continue;
      bf16* row = dqkv + (int64_t(b) * T_len + keys[m][r]) * s3 + 2 * t;
#pragma unroll
      for (int dn = 0; dn < D / 8; ++dn) {
        *reinterpret_cast<uint32_t*>(row + L.k_col(kvh) + dn * 8) =
            pack_f32(dk[m][dn][2 * r] * scale, dk[m][dn][2 * r + 1] * scale);
        *reinterpret_cast<uint32_t*>(row + L.v_col(kvh) + dn * 8) =
            pack_f32(dv[m][dn][2 * r], dv[m][dn][2 * r + 1]);
      }
    }
}

template <int D>
void forward_d(const Context& ctx, const AttentionShape& s, Tensor out, Tensor lse, Tensor qkv) {
  // Two row blocks per warp where the accumulators fit in registers (D = 64: 255 of 255).
  constexpr int kM = D == 64 ? 2 : 1;
  constexpr int kRows = kWarps * 16 * kM;
  const size_t smem = sizeof(bf16) * (kRows + 4 * kTile) * (D + 8);  // Q and two (K, V) buffers
  const dim3 grid(static_cast<unsigned>(ceil_div(s.T, kRows)), static_cast<unsigned>(s.B * s.H));
  auto kernel = attention_forward_mma_kernel<D, kM>;
  allow_smem(kernel, smem, D, "attention_forward");
  kernel<<<grid, kThreads, smem, ctx.stream>>>(out.ptr<bf16>(), lse.ptr<float>(), qkv.ptr<const bf16>(), int(s.T),
                                               int(s.H), int(s.Hkv), kLog2e / std::sqrt(float(D)));
  TRAINER_LAUNCH_CHECK();
}

// Q, dO and two (K, V) buffers.
template <int D, int kBk, int kM>
constexpr size_t dq_smem_bytes() {
  return sizeof(bf16) * (2 * kWarps * 16 * kM + 4 * kBk) * (D + 8);
}

template <int D, int kBk, int kM>
void dq_launch(const Context& ctx, const AttentionShape& s, Tensor dqkv, Tensor dout, Tensor qkv, Tensor lse,
               const float* dvec, float scale) {
  constexpr int kRows = kWarps * 16 * kM;
  const dim3 grid(static_cast<unsigned>(ceil_div(s.T, kRows)), static_cast<unsigned>(s.B * s.H));
  constexpr size_t smem = dq_smem_bytes<D, kBk, kM>();
  auto kernel = attention_dq_mma_kernel<D, kBk, kM>;
  allow_smem(kernel, smem, D, "attention_backward's dQ");
  kernel<<<grid, kThreads, smem, ctx.stream>>>(dqkv.ptr<bf16>(), dout.ptr<const bf16>(), qkv.ptr<const bf16>(),
                                               lse.ptr<const float>(), dvec, int(s.T), int(s.H), int(s.Hkv), scale,
                                               scale * kLog2e);
  TRAINER_LAUNCH_CHECK();
}

template <int D>
void backward_d(const Context& ctx, const AttentionShape& s, Tensor dqkv, Tensor dout, Tensor qkv, Tensor lse,
                const float* dvec) {
  // Two m16 blocks per warp where the accumulators fit in registers (D = 64).
  constexpr int kM = D == 64 ? 2 : 1;
  constexpr int kBq = 32;                 // dK/dV: queries per streamed tile
  const float scale = 1.0f / std::sqrt(float(D));
  // dQ's keys per streamed tile: 32 at D = 64; 64 at D = 128 where the GPU allows its 104 KB
  // (sm_80, sm_90), else 32 (70 KB; sm_86/sm_89 allow 99 KB). The tile size does not change
  // the result (see the top of this file).
  if constexpr (D == 64)
    dq_launch<D, 32, kM>(ctx, s, dqkv, dout, qkv, lse, dvec, scale);
  else if (dq_smem_bytes<D, 64, kM>() <= smem_optin_limit())
    dq_launch<D, 64, kM>(ctx, s, dqkv, dout, qkv, lse, dvec, scale);
  else
    dq_launch<D, 32, kM>(ctx, s, dqkv, dout, qkv, lse, dvec, scale);
  // K, V, two (Q, dO) buffers and two (lse, dvec) rows.
  constexpr int kKeys = kWarps * 16 * kM;
  const size_t smem_dkv = sizeof(bf16) * (2 * kKeys + 4 * kBq) * (D + 8) + sizeof(float) * 4 * kBq;
  auto dkv_kernel = attention_dkv_mma_kernel<D, kBq, kM>;
  allow_smem(dkv_kernel, smem_dkv, D, "attention_backward's dK/dV");
  const dim3 kv_grid(static_cast<unsigned>(ceil_div(s.T, kKeys)), static_cast<unsigned>(s.B * s.Hkv));
  dkv_kernel<<<kv_grid, kThreads, smem_dkv, ctx.stream>>>(dqkv.ptr<bf16>(), dout.ptr<const bf16>(),
                                                          qkv.ptr<const bf16>(), lse.ptr<const float>(), dvec,
                                                          int(s.T), int(s.H), int(s.Hkv), scale, scale * kLog2e);
  TRAINER_LAUNCH_CHECK();
}

}  // namespace

bool attention_mma_supported(const AttentionShape& s, DType dtype) {
  return dtype == DType::bf16 && (s.D == 64 || s.D == 128);
}

void attention_forward_mma(const Context& ctx, const AttentionShape& s, Tensor out, Tensor lse, Tensor qkv) {
  if (s.D == 64)
    forward_d<64>(ctx, s, out, lse, qkv);
  else
    forward_d<128>(ctx, s, out, lse, qkv);
}

void attention_backward_mma(const Context& ctx, const AttentionShape& s, Tensor dqkv, Tensor dout, Tensor qkv,
                            Tensor lse, const float* dvec) {
  if (s.D == 64)
    backward_d<64>(ctx, s, dqkv, dout, qkv, lse, dvec);
  else
    backward_d<128>(ctx, s, dqkv, dout, qkv, lse, dvec);
}

}  // namespace trainer::cuda
