// LayerNorm, forward and backward (split out of backend.h, which includes this file and states
// the rules every op follows). Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include "kernels/op_modes.h"
#include "kernels/tensor.h"

namespace trainer {

// LayerNorm, eps 1e-5, biased variance. out (N, C) act; mean, rstd (N) f32; inp (N, C) act;
// weight, bias (C) act.
struct LayernormForwardOp {
  static constexpr const char* kName = "layernorm_forward";
  Tensor out, mean, rstd, inp, weight, bias;
};
// dinp (N, C) act, overwritten or added per dinp_mode; dweight, dbias (C) f32 +=; dout, inp
// (N, C) act; weight (C) act; mean, rstd (N) f32. In place: dinp may be dout.
struct LayernormBackwardOp {
  static constexpr const char* kName = "layernorm_backward";
  Tensor dinp, dweight, dbias, dout, inp, weight, mean, rstd;
  Accumulate dinp_mode = Accumulate::overwrite;
};

}  // namespace trainer

#define TRAINER_LAYERNORM_OPS(X)                    \
  X(LayernormForwardOp, void, shape_of(op.inp))     \
  X(LayernormBackwardOp, void, shape_of(op.inp))
