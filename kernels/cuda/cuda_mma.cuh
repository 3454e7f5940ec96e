// Warp-level bf16 tensor-core helpers (sm_80+) for the attention kernels: mma.sync m16n8k16
// with f32 accumulators, fragment loads from shared memory with ldmatrix, and cp.async copies
// from global to shared memory, on the one-instruction wrappers of cuda_ptx.cuh.
// Fragment layout (PTX ISA, mma.m16n8k16, g = lane / 4, t = lane % 4):
//   A (16x16, row-major): a0a1 = (g, 2t..2t+1), a2a3 = (g+8, 2t..), a4a5 = (g, 2t+8..),
//                         a6a7 = (g+8, 2t+8..)
//   B (16x8, k x n):      b0b1 = (k = 2t..2t+1, n = g), b2b3 = (k = 2t+8.., n = g)
//   C (16x8, f32):        c0c1 = (g, 2t..2t+1), c2c3 = (g+8, 2t..2t+1)
// ldmatrix hands each lane exactly these pairs: lane l supplies the address of row l % 8 of the
// (l / 8)-th 8x8 matrix, and receives (row g, columns 2t, 2t+1) of every matrix, or with .trans
// (rows 2t, 2t+1, column g), which is the B fragment of a matrix stored k-major.
// Invariants: every fragment load is warp-uniform (all 32 lanes, the same tile and offsets);
// shared tiles have rows at 16-byte aligned addresses and offsets that are multiples of 8
// elements. Padding rows by 8 elements (row stride D + 8) keeps the 8 rows of each matrix in
// distinct banks.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ptx.cuh"

namespace trainer::cuda {

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  ptx_mma_m16n8k16_bf16(c, a, b0, b1);
}

__device__ __forceinline__ uint32_t pack_f32(float lo, float hi) { return bf16_bits(lo) | (bf16_bits(hi) << 16); }

// A fragment of rows r0.. / columns k0.. of a row-major shared tile with row stride ld.
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const bf16* X, int ld, int r0, int k0) {
  const int lane = threadIdx.x % 32;
  ptx_ldmatrix_x4(a, X + (r0 + lane % 16) * ld + k0 + (lane / 16) * 8);
}

// B fragment with B[k][n] = Y[n][k] (Y row-major, k contiguous): e.g. K in Q K^T.
__device__ __forceinline__ void load_b_kmajor(uint32_t& b0, uint32_t& b1, const bf16* Y, int ld, int n0, int k0) {
  const int lane = threadIdx.x % 32;
  ptx_ldmatrix_x2(b0, b1, Y + (n0 + lane % 8) * ld + k0 + ((lane / 8) % 2) * 8);
}

// B fragment with B[k][n] = Z[k][n] (Z row-major, n contiguous): e.g. V in P V.
__device__ __forceinline__ void load_b_nmajor(uint32_t& b0, uint32_t& b1, const bf16* Z, int ld, int k0, int n0) {
  const int lane = threadIdx.x % 32;
  ptx_ldmatrix_x2_trans(b0, b1, Z + (k0 + lane % 16) * ld + n0);
}

// A fragment (16 rows x 16 of k) from accumulators acc[2 kc] and acc[2 kc + 1].
__device__ __forceinline__ void acc_to_a(uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack_f32(lo[0], lo[1]);
  a[1] = pack_f32(lo[2], lo[3]);
  a[2] = pack_f32(hi[0], hi[1]);
  a[3] = pack_f32(hi[2], hi[3]);
}

// 16 bytes global -> shared without a register round trip; zero-filled when !valid (src is
// then not read but must still be a mapped address).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  ptx_cp_async_cg16(dst, src, valid ? 16 : 0);
}
// 4 bytes global -> shared (through L1: .cg takes 16-byte copies only); zero-filled when
// !valid, src then unread but mapped.
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
  ptx_cp_async_ca4(dst, src, valid ? 4 : 0);
}
__device__ __forceinline__ void cp_async_commit() { ptx_cp_async_commit(); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  ptx_cp_async_wait<N>();
}

}  // namespace trainer::cuda
