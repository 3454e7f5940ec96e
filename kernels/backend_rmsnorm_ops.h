// The Llama ops' arguments and contracts (RMSNorm, per-head RMSNorm, rotary embedding,
// SwiGLU), split out of backend.h, which includes this file and states the rules every op
// follows (dtypes "act"/"f32", "(R, C)" matrices, "exactly", in-place forms).
#pragma once

#include <cstdint>

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
// Rotary position embedding (Hugging Face's rotate-half layout: feature i pairs with
// i + D/2) on the q and k heads of a qkv tensor; v heads are copied. The token at sequence
// position t (row t of a (B, T) batch) sits at position pos_offset + t and is rotated by the
// angles (pos_offset + t) * inv_freq[i], computed in f32 as float(position) * inv_freq[i].
// out, inp exactly (B, T, (H + 2*Hkv)*D) act, D even; inv_freq (D/2) f32; pos_offset >= 0.
// In place: out may be inp.
struct RopeForwardOp {
  static constexpr const char* kName = "rope_forward";
  Tensor out, inp, inv_freq;
  int n_head = 0;
  int n_kv_head = 0;
  int64_t pos_offset = 0;
};
// The transposed rotation (the gradient of rope_forward): dinp, dout as out, inp above.
// In place: dinp may be dout.
struct RopeBackwardOp {
  static constexpr const char* kName = "rope_backward";
  Tensor dinp, dout, inv_freq;
  int n_head = 0;
  int n_kv_head = 0;
  int64_t pos_offset = 0;
};
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
