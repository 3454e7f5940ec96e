// The rotary position embedding of a qkv tensor's q and k heads, forward and backward (split out
// of backend.h, which includes this file and states the rules every op follows). Each op's line
// in the op list (op_list.h) sits under the structs.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace trainer {

// Rotary position embedding (Hugging Face's rotate-half layout: feature i pairs with
// i + D/2) on the q and k heads of a qkv tensor; v heads are copied. The token at sequence
// position t (row t of a (B, T) batch) sits at position pos_offset + t and is rotated by the
// angles (pos_offset + t) * inv_freq[i], computed in f32 as float(position) * inv_freq[i].
// out, inp exactly (B, T, (H + 2*Hkv)*D) act, D even; inv_freq (D/2) f32; pos_offset >= 0.
// positions, optional, (B, T) i32: each row's position instead (packed documents whose
// positions restart: each value in [0, t]); pos_offset must then be 0.
// In place: out may be inp.
struct RopeForwardOp {
  static constexpr const char* kName = "rope_forward";
  Tensor out, inp, inv_freq;
  int n_head = 0;
  int n_kv_head = 0;
  int64_t pos_offset = 0;
  Tensor positions{};
};
// The transposed rotation (the gradient of rope_forward): dinp, dout as out, inp above.
// In place: dinp may be dout.
struct RopeBackwardOp {
  static constexpr const char* kName = "rope_backward";
  Tensor dinp, dout, inv_freq;
  int n_head = 0;
  int n_kv_head = 0;
  int64_t pos_offset = 0;
  Tensor positions{};
};

}  // namespace trainer

#define TRAINER_ROPE_OPS(X)                                                 \
  X(RopeForwardOp, void, heads_of(op.inp, op.n_head, op.n_kv_head))         \
  X(RopeBackwardOp, void, heads_of(op.dout, op.n_head, op.n_kv_head))
