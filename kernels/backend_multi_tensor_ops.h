// Multi-tensor ops: one call over many tensors of the same kind, so that a device backend can
// do in one or a few launches (and one host read) what one op per tensor does in hundreds
// (split out of backend.h, which includes this file and states the rules every op follows).
// The CPU runs the pieces one after the other in their order, so its results are those of the
// single-tensor ops bit for bit.
// Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include <vector>

#include "kernels/backend_adamw_ops.h"
#include "kernels/tensor.h"

namespace trainer {

// AdamW over many contiguous ranges in one op: each piece is an AdamWOp with its own contract.
// The pieces share one step: lr, beta1, beta2, eps, grad_scale and step agree between pieces
// (weight_decay, seed and offset may differ). No piece's output overlaps another piece's
// tensors. Zero pieces is a no-op.
struct AdamWManyOp {
  static constexpr const char* kName = "adamw_many";
  std::vector<AdamWOp> pieces;
};

// The sum of squares of many float tensors of one dtype, in double precision: the sum, in
// their order, of what sum_squares gives for each. Synchronizes once (one host read for all).
struct SumSquaresManyOp {
  static constexpr const char* kName = "sum_squares_many";
  std::vector<Tensor> xs;
};

}  // namespace trainer

#define TRAINER_MULTI_TENSOR_OPS(X)          \
  X(AdamWManyOp, void, "all parameters")     \
  X(SumSquaresManyOp, double, "all pieces")
