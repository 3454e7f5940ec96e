// Host entry points of the CUDA kernels: cuda::run(ctx, op) for every op of the op list
// (op_list.h), defined next to its kernels (cuda_<op>.cu; matrix products in cuda_matmul.cpp)
// and called by CudaBackend with an op whose contract the front door (backend_ops.cpp) has
// checked. Each checks only the kernels' own limits (grid sizes, head sizes), launches on
// ctx.stream and checks every launch. Semantics are exactly those of the op structs
// (backend.h); "act" is f32 or bf16 as the tensors say.
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

class Matmul;

// How AdamW rounds the low-precision copy of the weights.
enum class Rounding : uint8_t { nearest, stochastic };

// What the kernels of one backend share: its stream, its scratch, its cuBLASLt products (only
// MatmulOp's run uses them) and AdamW's rounding (train.stochastic_rounding).
struct Context {
  cudaStream_t stream = nullptr;
  Workspace* workspace = nullptr;
  Matmul* matmul = nullptr;
  Rounding rounding = Rounding::nearest;
};

#define TRAINER_DECLARE_CUDA_RUN(Op, Result, ...) Result run(const Context& ctx, const Op& op);
TRAINER_OPS(TRAINER_DECLARE_CUDA_RUN)
#undef TRAINER_DECLARE_CUDA_RUN

// True when ptr allows 16-byte vector accesses.
inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

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

}  // namespace trainer::cuda
