// SwiGLU, the gated MLP's activation, forward and backward (split out of backend.h, which
// includes this file and states the rules every op follows). Each op's line in the op list
// (op_list.h) sits under the structs.
#pragma once

#include "kernels/tensor.h"

namespace trainer {

// SwiGLU: out (N, F) = silu(gate) * up, where each row of inp (N, 2F) is [gate (F) | up (F)]
// (the fused gate/up projection's output); silu(x) = x * sigmoid(x). All act.
struct SwigluForwardOp {
  static constexpr const char* kName = "swiglu_forward";
  Tensor out, inp;
};
// dinp (N, 2F) act, overwritten; inp (N, 2F) act; dout (N, F) act.
struct SwigluBackwardOp {
  static constexpr const char* kName = "swiglu_backward";
  Tensor dinp, inp, dout;
};

}  // namespace trainer

#define TRAINER_SWIGLU_OPS(X)                    \
  X(SwigluForwardOp, void, shape_of(op.inp))     \
  X(SwigluBackwardOp, void, shape_of(op.inp))
