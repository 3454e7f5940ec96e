// Ops that do in one pass what several ops of backend.h do in more, where a layout allows it
// (split out of backend.h, which includes this file and states the rules every op follows).
// Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace trainer {

// What xent_fused does with the logits after the loss.
enum class XentGrad : uint8_t { none, in_place };

// Softmax cross-entropy over the whole vocabulary in one op (tensor degree 1; the
// vocabulary-parallel path needs the group's max and sum between its passes): losses (N) f32 =
// log(sum over valid columns of exp(logit)) - the target's logit, and with XentGrad::in_place
// the logits (N, V) act are overwritten by dloss * (softmax - onehot(target)) on valid columns
// and 0 on padding, as xent_max, xent_sumexp, xent_loss and xent_backward (vocab_start 0) give
// together. With XentGrad::none the logits are only read. targets (N) i32 in [0, V); valid_cols
// in [1, V].
struct XentFusedOp {
  static constexpr const char* kName = "xent_fused";
  Tensor losses, logits, targets;
  int64_t valid_cols = 0;
  XentGrad grad = XentGrad::none;
  float dloss = 1;
};

}  // namespace trainer

#define TRAINER_FUSED_OPS(X) \
  X(XentFusedOp, void, shape_of(op.logits) + (op.grad == XentGrad::in_place ? " +grad" : ""))
