// The inline PTX of the tensor-core attention kernels, one instruction per function and nothing
// else: mma.sync m16n8k16 (bf16 in, f32 accumulators), ldmatrix from shared memory, and cp.async
// from global to shared memory. cuda_mma.cuh builds the fragments and addresses on these; the
// CPU emulator (tests/kernels/cuda_emu) supplies its own version of this file only, so every
// line of cuda_mma.cuh runs there as it does on a GPU.
#pragma once

#include <cstdint>

namespace trainer::cuda {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// c += A B on one m16n8k16 tile of fragments (layouts: cuda_mma.cuh).
__device__ __forceinline__ void ptx_mma_m16n8k16_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                                      uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ldmatrix.m8n8 of four or two 8x8 b16 matrices; `row` is this lane's row address.
__device__ __forceinline__ void ptx_ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(row)));
}
__device__ __forceinline__ void ptx_ldmatrix_x2(uint32_t& r0, uint32_t& r1, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(smem_u32(row)));
}
__device__ __forceinline__ void ptx_ldmatrix_x2_trans(uint32_t& r0, uint32_t& r1, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r0), "=r"(r1)
               : "r"(smem_u32(row)));
}

// cp.async of 16 (.cg, L2 only) or 4 (.ca) bytes, of which the first src_bytes are read and the
// rest zero-filled.
__device__ __forceinline__ void ptx_cp_async_cg16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void ptx_cp_async_ca4(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void ptx_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void ptx_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace trainer::cuda
