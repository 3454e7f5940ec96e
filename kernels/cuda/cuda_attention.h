// Internal to kernels/cuda (included by .cu files only): the two attention implementations behind attention_forward and
// attention_backward (cuda_ops.h). The tensor-core path (cuda_attention_mma.cu) takes bf16
// with head_dim 64 or 128 and 16-byte aligned tensors; the scalar path (cuda_attention.cu)
// takes everything else (f32, other head sizes up to 256). Both are flash-attention style:
// causal, online softmax, only lse (B,H,T) saved; backward recomputes P from q, k and lse
// with D = rowsum(dO * O), and computes dQ and dK/dV in two kernels so no atomics are needed.
// Grouped k/v heads: query head h reads k/v head h / (H / Hkv) where it lies in qkv (no
// copies); the dK/dV kernels run one block per (batch, k/v head, key tile) and walk the
// group's query heads in order, so a k/v head's gradient sums over its group deterministically.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

using AttentionShape = AttentionDims;

// The columns of a qkv row, [H q heads | Hkv k heads | Hkv v heads] of D, and the row strides.
struct QkvLayout {
  int H, Hkv, D;
  __host__ __device__ int64_t row() const { return int64_t(H + 2 * Hkv) * D; }  // qkv, dqkv
  __host__ __device__ int64_t out_row() const { return int64_t(H) * D; }        // out, dout
  __host__ __device__ int group() const { return H / Hkv; }  // query heads per k/v head
  __host__ __device__ int kv_head(int h) const { return h / group(); }
  __host__ __device__ int64_t q_col(int h) const { return int64_t(h) * D; }
  __host__ __device__ int64_t k_col(int j) const { return int64_t(H + j) * D; }
  __host__ __device__ int64_t v_col(int j) const { return int64_t(H + Hkv + j) * D; }
};

// Batch b's rows (stride layout.row()) of query head h's q and of its k/v head's k and v.
template <class T>
struct HeadRows {
  const T* q;
  const T* k;
  const T* v;
};
template <class T>
__device__ __forceinline__ HeadRows<T> head_rows(const QkvLayout& L, const T* qkv, int T_len, int b, int h) {
  const T* rows_b = qkv + int64_t(b) * T_len * L.row();
  return {rows_b + L.q_col(h), rows_b + L.k_col(L.kv_head(h)), rows_b + L.v_col(L.kv_head(h))};
}

// The most dynamic shared memory one block may opt in to on the current device: 227 KB on
// sm_90, 163 KB on sm_80, 99 KB on sm_86/sm_89 (A10, L4, L40S), which run our sm_80 code.
size_t smem_optin_limit();
// Throws a ConfigError naming the head size where `bytes` exceed smem_optin_limit().
void check_smem(size_t bytes, int64_t D, const char* kernel);

// Opts `kernel` in to `bytes` of dynamic shared memory (above 48 KB needs it), after
// check_smem, so that a GPU with less says so instead of failing the launch.
template <class K>
void allow_smem(K kernel, size_t bytes, int64_t D, const char* name) {
  check_smem(bytes, D, name);
  TRAINER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

bool attention_mma_supported(const AttentionShape& s, DType dtype);
void attention_forward_mma(const Context& ctx, const AttentionShape& s, Tensor out, Tensor lse,
                           Tensor qkv);
// dvec (B,H,T) f32 = rowsum(dout * out), computed by the caller.
void attention_backward_mma(const Context& ctx, const AttentionShape& s, Tensor dqkv,
                            Tensor dout, Tensor qkv, Tensor lse, const float* dvec);

}  // namespace trainer::cuda
