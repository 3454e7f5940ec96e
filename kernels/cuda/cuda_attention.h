// Internal to kernels/cuda: the two attention implementations behind attention_forward and
// attention_backward (cuda_ops.h). The tensor-core path (cuda_attention_mma.cu) takes bf16
// with head_dim 64 or 128 and 16-byte aligned tensors; the scalar path (cuda_attention.cu)
// takes everything else (f32, other head sizes up to 256). Both are flash-attention style:
// causal, online softmax, only lse (B,H,T) saved; backward recomputes P from q, k and lse
// with D = rowsum(dO * O), and computes dQ and dK/dV in two kernels so no atomics are needed.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

using AttentionShape = AttentionDims;

bool attention_mma_supported(const AttentionShape& s, DType dtype);
void attention_forward_mma(const Context& ctx, const AttentionShape& s, Tensor out, Tensor lse,
                           Tensor qkv);
// dvec (B,H,T) f32 = rowsum(dout * out), computed by the caller.
void attention_backward_mma(const Context& ctx, const AttentionShape& s, Tensor dqkv,
                            Tensor dout, Tensor qkv, Tensor lse, const float* dvec);

}  // namespace trainer::cuda
