// The token embedding, forward and backward (split out of backend.h, which includes this file
// and states the rules every op follows: dtypes "act"/"f32", "(R, C)" matrices, "exactly",
// aliasing). Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include <cstdint>

#include "kernels/tensor.h"

namespace trainer {

// out[b,t,:] = wte[tok - vocab_start] if vocab_start <= tok < vocab_start + Vl, else 0; plus
// wpe[t] when wpe is defined. The zero rows make a vocabulary-parallel embedding a sum over
// the tensor group. out (B*T, C) act; tokens exactly (B, T) i32; wte (Vl, C) act;
// wpe (>= T, C) act, optional. positions, optional (with wpe), (B, T) i32: the wpe row of each
// token instead of t (packed documents whose positions restart: each value in [0, t]).
struct EncoderForwardOp {
  static constexpr const char* kName = "encoder_forward";
  Tensor out, tokens, wte, wpe;
  int64_t vocab_start = 0;
  Tensor positions{};
};
// dwte (Vl, C) f32 +=; dwpe (>= T, C) f32 +=, optional; dout (B*T, C) act; tokens exactly
// (B, T) i32; positions as the forward's. Deterministic: no floating-point atomics.
struct EncoderBackwardOp {
  static constexpr const char* kName = "encoder_backward";
  Tensor dwte, dwpe, dout, tokens;
  int64_t vocab_start = 0;
  Tensor positions{};
};

}  // namespace trainer

#define TRAINER_ENCODER_OPS(X)                     \
  X(EncoderForwardOp, void, shape_of(op.out))      \
  X(EncoderBackwardOp, void, shape_of(op.dout))
