// Kernels that show the emulator (cuda_emu.h) tells right from wrong: a block sum with its
// barriers and without one, warp shuffles with every lane present and with one lane gone,
// shared memory read before this block wrote it, a cp.async from a misaligned address, and
// launches the hardware refuses. Compiled only for the emulator test (test_cuda_emu.cpp), which
// calls the host functions below.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_ptx.cuh"
#include "tests/kernels/cuda_emu/emu_selftest.h"

namespace trainer::testing::emu_selftest {
namespace {

// out[blockIdx.x] = the sum of in over the block's threads, lane 0 of warp 0 adding the
// warps' partial sums; `barrier` false leaves out the barrier between the writes and the read.
__global__ void block_sum_kernel(float* out, const float* in, bool barrier) {
  __shared__ float partial[32];
  const int t = threadIdx.x;
  float v = in[blockIdx.x * blockDim.x + t];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (t % 32 == 0) partial[t / 32] = v;
  if (barrier) __syncthreads();
  if (t == 0) {
    float s = 0;
    for (int w = 0; w < int(blockDim.x / 32); ++w) s += partial[w];
    out[blockIdx.x] = s;
  }
}

// Lane 5 leaves before the warp's shuffle with a full mask when `early_exit`.
__global__ void shuffle_kernel(int* out, bool early_exit) {
  const int lane = threadIdx.x % 32;
  if (early_exit && lane == 5) return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, lane * 10, (lane + 1) % 32);
}

// Block 0 writes its slot and every block reads it: a block other than 0 reads what it never
// wrote, which is garbage on the hardware (NaN bytes here), never block 0's value.
__global__ void unwritten_shared_kernel(float* out) {
  __shared__ float slot[1];
  if (blockIdx.x == 0) slot[0] = 7.0f;
  __syncthreads();
  out[blockIdx.x] = slot[0];
}

// 16 bytes by cp.async from `src`, waited for.
__global__ void cp_async_kernel(float* out, const float* src) {
  extern __shared__ __align__(16) float tile[];
  cuda::ptx_cp_async_cg16(tile, src, 16);
  cuda::ptx_cp_async_commit();
  cuda::ptx_cp_async_wait<0>();
  for (int i = 0; i < 4; ++i) out[i] = tile[i];
}

__global__ void dynamic_shared_kernel(float* out) {
  extern __shared__ __align__(16) float stage[];
  stage[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = stage[blockDim.x - 1 - threadIdx.x];
}

}  // namespace

std::vector<float> block_sums(const std::vector<float>& in, int blocks, int threads, bool barrier) {
  std::vector<float> out(size_t(blocks), 0.0f);
  ::emu::alternate_order();
  block_sum_kernel<<<blocks, threads>>>(out.data(), in.data(), barrier);
  return out;
}

std::vector<int> shuffle(bool early_exit) {
  std::vector<int> out(32, -1);
  shuffle_kernel<<<1, 32>>>(out.data(), early_exit);
  return out;
}

std::vector<float> unwritten_shared(int blocks) {
  std::vector<float> out(size_t(blocks), 0.0f);
  unwritten_shared_kernel<<<blocks, 32>>>(out.data());
  return out;
}

std::vector<float> cp_async_16(int misalign_floats) {
  alignas(16) float src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> out(4, 0.0f);
  cp_async_kernel<<<1, 1, 16>>>(out.data(), src + misalign_floats);
  return out;
}

cudaError_t launch_error(int blocks_y, int threads, size_t shared_bytes, int opt_in_bytes) {
  std::vector<float> out(size_t(threads), 0.0f);
  cudaGetLastError();
  if (opt_in_bytes > 0)
    if (cudaFuncSetAttribute(dynamic_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, opt_in_bytes) !=
        cudaSuccess)
      return cudaErrorInvalidValue;
  dynamic_shared_kernel<<<dim3(1, unsigned(blocks_y)), threads, shared_bytes>>>(out.data());
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess)
    for (int t = 0; t < threads; ++t)
      if (out[size_t(t)] != float(threads - 1 - t)) return cudaErrorUnknown;
  return e;
}

}  // namespace trainer::testing::emu_selftest
