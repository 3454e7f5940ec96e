// The row stage of the norm backward kernels (cuda_layernorm.cu, cuda_rmsnorm.cu): a block
// owns a few consecutive rows and first copies their dout and inp into shared memory, so its
// column pass (the weight gradients' partial sums) and its row pass (dinp, which reads each row
// twice: the row's sums, then the gradient) read global memory once instead of three times.
// Invariants: a block's rows are one contiguous range of both tensors; the stage holds dout's
// rows then inp's, each 16-byte aligned when `vec` (C % kChunk == 0 and 16-byte aligned
// tensors make every row start so); a block writes dinp only after the whole stage is copied
// and blocks own disjoint rows, so dinp may alias dout. Where one row of each does not fit
// kNormStageBytes (C above 18432 in bf16, 9216 in f32) the kernels read global memory as before.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cuda_common.cuh"

namespace trainer::cuda {

// Enough for 24 rows of C = 768 in bf16 (11 of C = 1600); three blocks fit an H100/H200 SM's
// 228 KB and two an A100's 164 KB.
constexpr int64_t kNormStageBytes = 72 * 1024;
constexpr int kNormBwdMaxRows = 32;
constexpr int kNormBwdThreads = 256;

// Rows per block: as many as the stage holds (at most kNormBwdMaxRows); 0 when not even one
// row of dout and inp fits, and the block then owns kNormBwdMaxRows rows read from global memory.
inline int norm_stage_rows(int64_t C, int64_t elem_bytes) {
  return static_cast<int>(std::min<int64_t>(kNormStageBytes / (2 * C * elem_bytes), kNormBwdMaxRows));
}

// Dynamic shared memory of a launch with `stage_rows` rows per block.
inline size_t norm_stage_bytes(int stage_rows, int64_t C, int64_t elem_bytes) {
  return static_cast<size_t>(2 * int64_t(stage_rows) * C * elem_bytes);
}

// n elements of src (global) into dst (shared) by the whole block, 16 bytes at a time when vec.
template <class T>
__device__ __forceinline__ void stage_copy(T* dst, const T* src, int64_t n, bool vec) {
  if (vec) {
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    const int64_t n16 = n * int64_t(sizeof(T)) / 16;
    for (int64_t i = threadIdx.x; i < n16; i += blockDim.x) d[i] = s[i];
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
  }
}

// Where this block's rows of dout and inp are read from: the stage (copied here, then a
// barrier) or global memory. rows x C elements each, starting at the block's first row.
template <class T>
struct NormRows {
  const T* dout;
  const T* inp;
};

template <class T>
__device__ __forceinline__ NormRows<T> norm_stage(unsigned char* stage, const T* dout, const T* inp, int rows,
                                                  int64_t C, bool staged, bool vec) {
  if (!staged) return {dout, inp};
  T* s_dout = reinterpret_cast<T*>(stage);
  T* s_inp = s_dout + int64_t(rows) * C;
  stage_copy(s_dout, dout, int64_t(rows) * C, vec);
  stage_copy(s_inp, inp, int64_t(rows) * C, vec);
  __syncthreads();
  return {s_dout, s_inp};
}

}  // namespace trainer::cuda
