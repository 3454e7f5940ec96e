// AdamW on one contiguous range (split out of backend.h, which includes this file and states
// the rules every op follows; its form over many ranges, AdamWManyOp, is in
// backend_multi_tensor_ops.h). The op's line in the op list (op_list.h) sits under the struct.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace trainer {

// One AdamW step over a contiguous range (decoupled weight decay, bias correction).
struct AdamWStep {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0;  // already 0 for tensors that are not decayed
  float grad_scale = 1;    // multiplies the gradient first (grad-norm clipping)
  int64_t step = 1;        // 1-based, for bias correction
  uint64_t seed = 0;       // stochastic rounding of the low-precision copy (CUDA), keyed by
  uint64_t offset = 0;     // (seed, element offset within the rank's slice of the tensor)
};

// AdamW on one contiguous range: param (n) f32 master, grad, m, v (n) f32; param_copy (n)
// act, optional, receives the updated weights in the compute dtype (absent when the master
// is itself the compute copy). step >= 1.
struct AdamWOp {
  static constexpr const char* kName = "adamw";
  Tensor param, grad, m, v, param_copy;
  AdamWStep h;
};

}  // namespace trainer

// One row for all AdamW calls: their shapes are the parameter tensors, dozens of them.
#define TRAINER_ADAMW_OPS(X) X(AdamWOp, void, "all parameters")
