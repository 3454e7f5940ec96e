// Tile helpers of the tensor-core attention kernels (cuda_attention_mma.cu): global -> shared
// tile copies with cp.async (rows past the sequence zero-filled), the two-buffer ring the
// kernels stream their tiles through, and the warp products over kM m16 row blocks (every
// shared-memory fragment read feeds the kM blocks; products accumulate over k in ascending
// order, whatever kM is). Shared tiles are row-major with row stride ld = D + 8 (see
// cuda_mma.cuh for why).
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_mma.cuh"

namespace trainer::cuda {

// m16 row r of block m in a warp's share starting at row `base`, for fragment element half
// r (0: g, 1: g + 8), g = lane / 4: the rows a warp's accumulators hold.
template <int kM>
__device__ __forceinline__ void warp_rows(int (&rows)[kM][2], int base) {
  const int g = (threadIdx.x % 32) / 4;
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) rows[m][r] = base + 16 * m + 8 * r + g;
}

// Of key tiles 0..last (`tile` keys each), the last one with a key at or before a row of the
// warp's `count` rows from `first`; -1 when the warp has no row before T_len. The tiles after
// it are past the causal diagonal for every row of the warp.
__device__ __forceinline__ int warp_last_tile(int first, int count, int tile, int last, int T_len) {
  return first < T_len ? min(last, (first + count - 1) / tile) : -1;
}

// rows x D tile from global rows row0.. (row stride `stride` elements) into shared memory
// (row stride ld), rows at or past T_len zero, with cp.async (no register round trip): complete
// once a cp_async_wait covers the group the caller commits.
template <int D>
__device__ __forceinline__ void load_tile_async(bf16* dst, int ld, const bf16* src, int64_t stride, int rows,
                                                int row0, int T_len) {
  constexpr int kPerRow = D / 8;
  for (int i = threadIdx.x; i < rows * kPerRow; i += blockDim.x) {
    const int r = i / kPerRow, c = (i % kPerRow) * 8;
    const bool valid = row0 + r < T_len;
    cp_async16(dst + r * ld + c, src + (valid ? int64_t(row0 + r) * stride + c : 0), valid);
  }
}

// Two buffers, each a pair of kRows x D tiles (K and V, or Q and dO) in shared memory: pair
// i + 1 streams in with cp.async while the block works on pair i. Per iteration i:
// issue(i + 1, ...) when there is one, wait(more), use first(i) / second(i), release().
template <int D, int kRows>
struct TileRing {
  static constexpr int LD = D + 8;
  bf16* base;  // 4 tiles of kRows x LD
  __device__ bf16* first(int i) const { return base + (i % 2) * 2 * kRows * LD; }
  __device__ bf16* second(int i) const { return first(i) + kRows * LD; }
  // Starts pair i (rows row0.. of a and of b, row strides sa and sb) as one cp.async group,
  // with whatever this thread issued before. Its buffer was last read in iteration i - 2,
  // which ended with release().
  __device__ void issue(int i, const bf16* a, int64_t sa, const bf16* b, int64_t sb, int row0, int T_len) const {
    load_tile_async<D>(first(i), LD, a, sa, kRows, row0, T_len);
    load_tile_async<D>(second(i), LD, b, sb, kRows, row0, T_len);
    cp_async_commit();
  }
  // The current pair complete for the whole block; `more`: the next one was issued after it.
  __device__ static void wait(bool more) {
    if (more)
      cp_async_wait<1>();
    else
      cp_async_wait<0>();
    __syncthreads();
  }
  // Iteration kt of a walk over pairs 0..last whose first two were issued up front: issues pair
  // kt + 1 (rows (kt + 1) kRows.. of a and b) behind it, then waits for pair kt.
  __device__ void arrive(int kt, int last, const bf16* a, int64_t sa, const bf16* b, int64_t sb, int T_len) const {
    if (kt > 0 && kt < last) issue(kt + 1, a, sa, b, sb, (kt + 1) * kRows, T_len);
    wait(kt < last);
  }
  // Every warp is done with the current pair's buffer.
  __device__ static void release() { __syncthreads(); }
};

// S (16 kM x kN) += X rows [r0, r0 + 16 kM) (k = D) times Y^T, Y rows [0, kN): the Q K^T
// pattern, every Y fragment feeding the kM row blocks.
template <int D, int kN, int kM>
__device__ __forceinline__ void gemm_xyt(float (&s)[kM][kN / 8][4], const bf16* X, const bf16* Y, int ld, int r0) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a[kM][4];
#pragma unroll
    for (int m = 0; m < kM; ++m) load_a(a[m], X, ld, r0 + 16 * m, kk * 16);
#pragma unroll
    for (int nt = 0; nt < kN / 8; ++nt) {
      uint32_t b0, b1;
      load_b_kmajor(b0, b1, Y, ld, nt * 8, kk * 16);
#pragma unroll
      for (int m = 0; m < kM; ++m) mma_bf16(s[m][nt], a[m], b0, b1);
    }
  }
}

// The A fragments of rows [r0, r0 + 16 kM) (k = D) of a row-major shared tile, for operands
// that stay fixed over a kernel's loop (the query tile in the forward, Q and dO in dQ).
template <int D, int kM>
__device__ __forceinline__ void load_a_rows(uint32_t (&xa)[kM][D / 16][4], const bf16* X, int ld, int r0) {
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) load_a(xa[m][kk], X, ld, r0 + 16 * m, kk * 16);
}

// gemm_xyt with X's fragments from load_a_rows (the same products in the same order).
template <int D, int kN, int kM>
__device__ __forceinline__ void gemm_ayt(float (&s)[kM][kN / 8][4], const uint32_t (&xa)[kM][D / 16][4],
                                         const bf16* Y, int ld) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int nt = 0; nt < kN / 8; ++nt) {
      uint32_t b0, b1;
      load_b_kmajor(b0, b1, Y, ld, nt * 8, kk * 16);
#pragma unroll
      for (int m = 0; m < kM; ++m) mma_bf16(s[m][nt], xa[m][kk], b0, b1);
    }
}

// O (16 kM x D) += P (16 kM x kK, in accumulators) times Z rows [0, kK) (row-major, D columns),
// every Z fragment feeding the kM row blocks.
template <int D, int kK, int kM>
__device__ __forceinline__ void gemm_pz(float (&o)[kM][D / 8][4], const float (&p)[kM][kK / 8][4], const bf16* Z,
                                        int ld) {
#pragma unroll
  for (int kc = 0; kc < kK / 16; ++kc) {
    uint32_t a[kM][4];
#pragma unroll
    for (int m = 0; m < kM; ++m) acc_to_a(a[m], p[m][2 * kc], p[m][2 * kc + 1]);
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      uint32_t b0, b1;
      load_b_nmajor(b0, b1, Z, ld, kc * 16, dn * 8);
#pragma unroll
      for (int m = 0; m < kM; ++m) mma_bf16(o[m][dn], a[m], b0, b1);
    }
  }
}

}  // namespace trainer::cuda
