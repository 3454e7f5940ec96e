// The emulator's kernels/cuda/cuda_ptx.cuh: test_cuda_emu puts this folder first on its include
// path, so cuda_mma.cuh and the tensor-core attention kernels compile unchanged against these
// instructions without PTX. mma.sync and ldmatrix are warp-collective as on the hardware (all
// 32 lanes take part), with the PTX ISA's fragment layouts for mma.m16n8k16 and ldmatrix.m8n8
// (g = lane / 4, t = lane % 4):
//   A 16x16: a[0] = (g, 2t..2t+1), a[1] = (g+8, 2t..), a[2] = (g, 2t+8..), a[3] = (g+8, 2t+8..)
//   B 16x8 (k x n): b0 = (k = 2t..2t+1, n = g), b1 = (k = 2t+8.., n = g)
//   C 16x8 f32: c[0], c[1] = (g, 2t..2t+1), c[2], c[3] = (g+8, 2t..2t+1)
//   ldmatrix: lane 8 i + r gives the address of row r of matrix i; each lane receives
//   (row g, columns 2t, 2t+1) of every matrix, with .trans (rows 2t, 2t+1, column g).
// ldmatrix rows must be 16-byte aligned and cp.async addresses aligned to the copy's size, as
// the PTX requires; cp.async copies land as cuda_emu.h's async_copy says. The
// product sums its 16 exact bf16 products in f32 in k order, then adds the accumulator: the
// hardware's order and internal precision are unspecified, so results agree to rounding.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace trainer::cuda {

namespace emu_ptx {

inline float bf16_at(uint32_t pair, int half) { return __uint_as_float(half ? pair & 0xffff0000u : pair << 16); }

inline uint32_t pair_at(const void* row0, int col0, const void* row1, int col1) {
  uint16_t lo, hi;
  std::memcpy(&lo, static_cast<const char*>(row0) + 2 * col0, 2);
  std::memcpy(&hi, static_cast<const char*>(row1) + 2 * col1, 2);
  return uint32_t(lo) | (uint32_t(hi) << 16);
}

inline void require_aligned(const void* p, uintptr_t to, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % to != 0)
    ::emu::kernel_error(std::string(what) + " at an address not aligned to " + std::to_string(to) + " bytes");
}

template <int N, bool kTrans>
inline void ldmatrix(uint32_t* out, const void* row) {
  require_aligned(row, 16, "an ldmatrix row");
  const uint64_t* slots = ::emu::warp_exchange(0xffffffffu, reinterpret_cast<uintptr_t>(row));
  const int lane = ::emu::lane_id(), g = lane / 4, t = lane % 4;
  if (lane == 0) {
    // Each 8x8 matrix is one pass over the 32 4-byte banks: its 8 rows of 16 bytes are free of
    // conflicts when they fall in 8 different groups of 4 banks ((address / 16) % 8).
    int64_t conflicts = 0;
    for (int i = 0; i < N; ++i) {
      int seen = 0;
      for (int r = 0; r < 8; ++r) seen |= 1 << (slots[8 * i + r] / 16 % 8);
      conflicts += 8 - __builtin_popcount(unsigned(seen));
    }
    ::emu::add_count("ldmatrix matrices", N);
    ::emu::add_count("ldmatrix bank conflicts", conflicts);
  }
  for (int i = 0; i < N; ++i) {
    const auto address = [&](int r) { return reinterpret_cast<const void*>(uintptr_t(slots[8 * i + r])); };
    out[i] = kTrans ? pair_at(address(2 * t), g, address(2 * t + 1), g) : pair_at(address(g), 2 * t, address(g), 2 * t + 1);
  }
  // The warp's reads are one instruction: no lane writes the tile before all have read it.
  ::emu::warp_exchange(0xffffffffu, 0);
}

inline void cp_async(void* dst, const void* src, int cp_bytes, int src_bytes) {
  require_aligned(dst, uintptr_t(cp_bytes), "a cp.async destination");
  if (src_bytes > 0) require_aligned(src, uintptr_t(cp_bytes), "a cp.async source");
  // The first src_bytes from src, the rest zeros (a tail of zeros when src_bytes < cp_bytes).
  if (src_bytes > 0) ::emu::async_copy(dst, src, src_bytes, true);
  if (src_bytes < cp_bytes) ::emu::async_copy(static_cast<char*>(dst) + src_bytes, nullptr, cp_bytes - src_bytes, false);
}

}  // namespace emu_ptx

inline void ptx_mma_m16n8k16_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  uint32_t A[32][4], B[32][2];
  for (int round = 0; round < 3; ++round) {
    const uint64_t mine = round < 2 ? (uint64_t(a[2 * round]) | (uint64_t(a[2 * round + 1]) << 32))
                                    : (uint64_t(b0) | (uint64_t(b1) << 32));
    const uint64_t* slots = ::emu::warp_exchange(0xffffffffu, mine);
    for (int l = 0; l < 32; ++l) {
      uint32_t* dst = round < 2 ? &A[l][2 * round] : B[l];
      dst[0] = uint32_t(slots[l]);
      dst[1] = uint32_t(slots[l] >> 32);
    }
  }
  float a_full[16][16], b_full[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int h = 0; h < 2; ++h) {
      a_full[g][2 * t + h] = emu_ptx::bf16_at(A[l][0], h);
      a_full[g + 8][2 * t + h] = emu_ptx::bf16_at(A[l][1], h);
      a_full[g][2 * t + 8 + h] = emu_ptx::bf16_at(A[l][2], h);
      a_full[g + 8][2 * t + 8 + h] = emu_ptx::bf16_at(A[l][3], h);
      b_full[2 * t + h][g] = emu_ptx::bf16_at(B[l][0], h);
      b_full[2 * t + 8 + h][g] = emu_ptx::bf16_at(B[l][1], h);
    }
  }
  const int lane = ::emu::lane_id(), g = lane / 4, t = lane % 4;
  if (lane == 0) ::emu::add_count("mma m16n8k16", 1);  // one per warp instruction
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
    float s = 0;
    for (int k = 0; k < 16; ++k) s += a_full[row][k] * b_full[k][col];
    c[e] += s;
  }
}

inline void ptx_ldmatrix_x4(uint32_t (&r)[4], const void* row) { emu_ptx::ldmatrix<4, false>(r, row); }
inline void ptx_ldmatrix_x2(uint32_t& r0, uint32_t& r1, const void* row) {
  uint32_t r[2];
  emu_ptx::ldmatrix<2, false>(r, row);
  r0 = r[0];
  r1 = r[1];
}
inline void ptx_ldmatrix_x2_trans(uint32_t& r0, uint32_t& r1, const void* row) {
  uint32_t r[2];
  emu_ptx::ldmatrix<2, true>(r, row);
  r0 = r[0];
  r1 = r[1];
}

inline void ptx_cp_async_cg16(void* dst, const void* src, int src_bytes) { emu_ptx::cp_async(dst, src, 16, src_bytes); }
inline void ptx_cp_async_ca4(void* dst, const void* src, int src_bytes) { emu_ptx::cp_async(dst, src, 4, src_bytes); }
inline void ptx_cp_async_commit() { ::emu::async_commit(); }
template <int N>
inline void ptx_cp_async_wait() {
  ::emu::async_wait(N);
}

}  // namespace trainer::cuda
