// Host entry points of the CUDA kernels (one .cu file per op family), called by CudaBackend
// with an op whose contract the front door (backend_ops.cpp) has checked. Each checks only the
// kernels' own limits (grid sizes, head sizes), launches on ctx.stream and checks every
// launch. Semantics are exactly those of kernels/backend.h; "act" is f32 or bf16 as the
// tensors say.
//
// Determinism: our kernels give bit-identical results run to run and on any GPU model: grids
// that reduce are fixed by the problem size (never by the SM count), reductions combine in a
// fixed order, and no floating-point atomics are used anywhere. Matrix products go through
// cuBLASLt, which is deterministic run to run on one GPU model but may pick other algorithms
// (other rounding) on another.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_workspace.h"

namespace trainer::cuda {

struct Context {
  cudaStream_t stream = nullptr;
  Workspace* workspace = nullptr;
};

// True when ptr allows 16-byte vector accesses.
inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

void encoder_forward(const Context& ctx, const EncoderForwardOp& op);
void encoder_backward(const Context& ctx, const EncoderBackwardOp& op);

void layernorm_forward(const Context& ctx, const LayernormForwardOp& op);
void layernorm_backward(const Context& ctx, const LayernormBackwardOp& op);

void bias_backward(const Context& ctx, const BiasBackwardOp& op);
// One sum of add_column_partials: dst (C) += the column sums of partial (count, C).
struct ColumnPartials {
  float* dst;
  const float* partial;
};
// The second pass of the norms' deterministic weight gradients: the column sums in a fixed
// order, for one gradient or two of the same shape (LayerNorm's weight and bias, the head
// norms' q and k weights) in one launch.
void add_column_partials(const Context& ctx, ColumnPartials a, int64_t count, int64_t C);
void add_column_partials(const Context& ctx, ColumnPartials a, ColumnPartials b, int64_t count, int64_t C);
// out (M,N) += bias (N) broadcast over rows; the fallback when no cuBLASLt epilogue fits.
void bias_add_rows(const Context& ctx, Tensor out, Tensor bias);

void attention_forward(const Context& ctx, const AttentionForwardOp& op);
void attention_backward(const Context& ctx, const AttentionBackwardOp& op);
// Generation (cuda_attention_cached.cu).
void attention_cached(const Context& ctx, const AttentionCachedOp& op);

// The Llama ops (cuda_rmsnorm.cu, cuda_rope.cu, cuda_swiglu.cu).
void rmsnorm_forward(const Context& ctx, const RmsnormForwardOp& op);
void rmsnorm_backward(const Context& ctx, const RmsnormBackwardOp& op);
void head_rmsnorm_forward(const Context& ctx, const HeadRmsnormForwardOp& op);
void head_rmsnorm_backward(const Context& ctx, const HeadRmsnormBackwardOp& op);
void rope_forward(const Context& ctx, const RopeForwardOp& op);
void rope_backward(const Context& ctx, const RopeBackwardOp& op);
void swiglu_forward(const Context& ctx, const SwigluForwardOp& op);
void swiglu_backward(const Context& ctx, const SwigluBackwardOp& op);

void gelu_forward(const Context& ctx, const GeluForwardOp& op);
void gelu_backward(const Context& ctx, const GeluBackwardOp& op);
void add(const Context& ctx, const AddOp& op);
void scale(const Context& ctx, const ScaleOp& op);
void fill(const Context& ctx, const FillOp& op);
void init_normal(const Context& ctx, const InitNormalOp& op);
void cast(const Context& ctx, const CastOp& op);
double sum_squares(const Context& ctx, const SumSquaresOp& op);
// One pass over all tensors (a few launches) and one host read.
double sum_squares_many(const Context& ctx, const SumSquaresManyOp& op);

void xent_max(const Context& ctx, const XentMaxOp& op);
void xent_sumexp(const Context& ctx, const XentSumexpOp& op);
void xent_loss(const Context& ctx, const XentLossOp& op);
void xent_backward(const Context& ctx, const XentBackwardOp& op);
void xent_fused(const Context& ctx, const XentFusedOp& op);

enum class Rounding : uint8_t { nearest, stochastic };
void adamw(const Context& ctx, const AdamWOp& op, Rounding rounding);
// One launch per kAdamWTablePieces pieces.
void adamw_many(const Context& ctx, const AdamWManyOp& op, Rounding rounding);

}  // namespace trainer::cuda
