// Causal attention over a whole sequence (or its packed documents), forward and backward, with grouped k/v heads (split
// out of backend.h, which includes this file and states the rules every op follows; attention
// over a KV cache is in backend_generation_ops.h). Each op's line in the op list (op_list.h)
// sits under the structs.
#pragma once

#include "kernels/tensor.h"

namespace trainer {

// Causal attention, scale 1/sqrt(D), with grouped k/v heads: H query heads share Hkv k/v
// heads (n_kv_head; 0 means H, ordinary multi-head attention; 1 is multi-query), query head h
// reading k/v head h / (H / Hkv). qkv exactly (B, T, (H + 2*Hkv)*D) act laid out
// [q heads | k heads | v heads], D >= 1; out (B*T, H*D) act; lse (B*H*T) f32, laid out
// (B, H, T): the log-sum-exp of each softmax row, saved for backward.
// doc_start, optional, (B, T) i32: the document mask of packed sequences. Row t of sequence b
// sees keys doc_start[b, t] .. t only (the start of its document: each value in [0, t], and
// non-decreasing along t); undefined means plain causal (0 .. t). Work the mask hides entirely
// is skipped.
struct AttentionForwardOp {
  static constexpr const char* kName = "attention_forward";
  Tensor out, lse, qkv;
  int n_head = 0;
  int n_kv_head = 0;
  Tensor doc_start{};
};
// dqkv (B*T, (H + 2*Hkv)*D) act, overwritten (a k/v head's gradient sums over its group of
// query heads); dout, out (B*T, H*D) act; lse (B*H*T) f32; doc_start as the forward's.
struct AttentionBackwardOp {
  static constexpr const char* kName = "attention_backward";
  Tensor dqkv, dout, qkv, out, lse;
  int n_head = 0;
  int n_kv_head = 0;
  Tensor doc_start{};
};

}  // namespace trainer

#define TRAINER_ATTENTION_OPS(X)                                                  \
  X(AttentionForwardOp, void, heads_of(op.qkv, op.n_head, op.n_kv_head))          \
  X(AttentionBackwardOp, void, heads_of(op.qkv, op.n_head, op.n_kv_head))
