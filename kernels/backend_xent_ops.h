// The three-pass softmax cross-entropy of a vocabulary-parallel head (split out of backend.h,
// which includes this file and states the rules every op follows; the one-pass XentFusedOp for
// tensor degree 1 is in backend_fused_ops.h).
// Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace trainer {

// Softmax cross-entropy over the (local slice of the) vocabulary, in three passes so that a
// vocabulary-parallel caller can reduce the row max, the sum of exponentials and the target
// logit across its tensor group in between. logits (N, Vl) act; only the first valid_cols
// (0 <= valid_cols <= Vl) columns are real vocabulary (padding is ignored); targets (N) i32
// are global ids, local column = target - vocab_start. maxes (N) f32 = row max over valid
// columns.
struct XentMaxOp {
  static constexpr const char* kName = "xent_max";
  Tensor maxes, logits;
  int64_t valid_cols = 0;
};
// sumexp (N) f32 = sum over valid columns of exp(logit - maxes); target_logit (N) f32 = the
// target's logit when it falls in this slice, else 0; maxes (N) f32.
struct XentSumexpOp {
  static constexpr const char* kName = "xent_sumexp";
  Tensor sumexp, target_logit, logits, maxes, targets;
  int64_t vocab_start = 0;
  int64_t valid_cols = 0;
};
// losses (N) f32 = log(sumexp) + maxes - target_logit, all (N) f32.
struct XentLossOp {
  static constexpr const char* kName = "xent_loss";
  Tensor losses, maxes, sumexp, target_logit;
};
// dlogits (N, Vl) act = dloss * (softmax - onehot(target)) on valid columns, 0 on padding.
// In place: dlogits may be logits (the logits are not needed afterwards).
struct XentBackwardOp {
  static constexpr const char* kName = "xent_backward";
  Tensor dlogits, logits, maxes, sumexp, targets;
  int64_t vocab_start = 0;
  int64_t valid_cols = 0;
  float dloss = 1;
};

}  // namespace trainer

#define TRAINER_XENT_OPS(X)                       \
  X(XentMaxOp, void, shape_of(op.logits))         \
  X(XentSumexpOp, void, shape_of(op.logits))      \
  X(XentLossOp, void, shape_of(op.losses))        \
  X(XentBackwardOp, void, shape_of(op.logits))
