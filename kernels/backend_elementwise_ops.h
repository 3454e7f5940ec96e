// The elementwise ops and the one-tensor reduction (split out of backend.h, which includes this
// file and states the rules every op follows): GELU forward and backward, add, scale, fill,
// cast and sum of squares.
// Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include "kernels/tensor.h"

namespace trainer {

// GELU, tanh approximation; all act with one element count. In place: out may be inp.
struct GeluForwardOp {
  static constexpr const char* kName = "gelu_forward";
  Tensor out, inp;
};
// In place: dinp may be dout.
struct GeluBackwardOp {
  static constexpr const char* kName = "gelu_backward";
  Tensor dinp, inp, dout;
};
// out = a + b (the residual, loss sums); each float, one element count. In place: out may be
// a or b.
struct AddOp {
  static constexpr const char* kName = "add";
  Tensor out, a, b;
};
// x *= alpha; x float.
struct ScaleOp {
  static constexpr const char* kName = "scale";
  Tensor x;
  float alpha = 1;
};
// x = value; x float.
struct FillOp {
  static constexpr const char* kName = "fill";
  Tensor x;
  float value = 0;
};
// dst = src converted (round to nearest, ties to even); dst, src float or bf16 (bf16 on every
// backend, the CPU's included: the gradient reduction's wire format), one element count.
struct CastOp {
  static constexpr const char* kName = "cast";
  Tensor dst, src;
};
// Sum of squares of x (float) in double precision; synchronizes.
struct SumSquaresOp {
  static constexpr const char* kName = "sum_squares";
  Tensor x;
};

}  // namespace trainer

#define TRAINER_ELEMENTWISE_OPS(X)                                           \
  X(GeluForwardOp, void, shape_of(op.inp))                                   \
  X(GeluBackwardOp, void, shape_of(op.inp))                                  \
  X(AddOp, void, shape_of(op.out))                                           \
  X(ScaleOp, void, shape_of(op.x))                                           \
  X(FillOp, void, shape_of(op.x))                                            \
  X(CastOp, void, shape_of(op.src) + " -> " + dtype_name(op.dst.dtype))      \
  X(SumSquaresOp, double, shape_of(op.x))
