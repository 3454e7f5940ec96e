// RMSNorm over rows and per head of a qkv tensor (qk-norm), forward and backward (split out of
// backend.h, which includes this file and states the rules every op follows: dtypes
// "act"/"f32", "(R, C)" matrices, "exactly", in-place forms). Each op's line in the op list
// (op_list.h) sits under the structs.
#pragma once

#include "kernels/op_modes.h"
#include "kernels/tensor.h"

namespace trainer {

// RMSNorm (Llama): out = inp * rstd * weight, rstd = 1 / sqrt(mean(inp^2) + eps) per row.
// out (N, C) act; rstd (N) f32; inp (N, C) act; weight (C) act; eps > 0.
struct RmsnormForwardOp {
  static constexpr const char* kName = "rmsnorm_forward";
  Tensor out, rstd, inp, weight;
  float eps = 1e-5f;
};
// dinp (N, C) act, overwritten or added per dinp_mode; dweight (C) f32 +=; dout, inp (N, C)
// act; weight (C) act; rstd (N) f32. In place: dinp may be dout.
struct RmsnormBackwardOp {
  static constexpr const char* kName = "rmsnorm_backward";
  Tensor dinp, dweight, dout, inp, weight, rstd;
  Accumulate dinp_mode = Accumulate::overwrite;
};
// RMSNorm of every q and k head of a qkv tensor over its D features (qk-norm, as Qwen3 and
// OLMo 2): q heads scaled by q_weight, k heads by k_weight, v heads copied. out, inp exactly
// (B, T, (H + 2*Hkv)*D) act; rstd (B*T*(H + Hkv)) f32, one per (row, q-or-k head) in the
// column order of the heads; q_weight, k_weight (D) act.
struct HeadRmsnormForwardOp {
  static constexpr const char* kName = "head_rmsnorm_forward";
  Tensor out, rstd, inp, q_weight, k_weight;
  int n_head = 0;
  int n_kv_head = 0;
  float eps = 1e-6f;
};
// dinp (B*T, (H + 2*Hkv)*D) act, overwritten (v heads: dout's); dq_weight, dk_weight (D) f32
// +=; dout, inp exactly (B, T, (H + 2*Hkv)*D) act; the rest as in forward. In place: dinp may
// be dout.
struct HeadRmsnormBackwardOp {
  static constexpr const char* kName = "head_rmsnorm_backward";
  Tensor dinp, dq_weight, dk_weight, dout, inp, q_weight, k_weight, rstd;
  int n_head = 0;
  int n_kv_head = 0;
};

}  // namespace trainer

#define TRAINER_RMSNORM_OPS(X)                                                      \
  X(RmsnormForwardOp, void, shape_of(op.inp))                                       \
  X(RmsnormBackwardOp, void, shape_of(op.inp))                                      \
  X(HeadRmsnormForwardOp, void, heads_of(op.inp, op.n_head, op.n_kv_head))          \
  X(HeadRmsnormBackwardOp, void, heads_of(op.inp, op.n_head, op.n_kv_head))
