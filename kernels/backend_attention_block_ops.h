// Ring attention's two ops (context parallelism): the queries of this rank's rows against one
// block of keys and values (its own, or another rank's passed around the ring), merged into a
// running result by log-sum-exp, and that block's share of the backward pass. Which keys a
// query sees is decided by global positions, so the rows of either side may be any chunks of
// the sequence: key j is visible to query i iff k_pos[j] <= q_pos[i] and, with documents,
// k_pos[j] >= q_doc[i] (its document's start). Scale 1/sqrt(D), grouped k/v heads as in
// backend_attention_ops.h. Split out of backend.h, which includes this file and states the
// rules every op follows; each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include "kernels/tensor.h"

namespace trainer {

// qkv exactly (B, Tq, (H + 2*Hkv)*D) act: the local rows, whose q heads are read; kv exactly
// (B, Tk, 2*Hkv*D) act, [k heads | v heads]; q_pos (B, Tq) i32, q_doc (B, Tq) i32 optional,
// k_pos (B, Tk) i32. out (B*Tq, H*D) f32 and lse (B*H*Tq) f32, laid out (B, H, Tq), are read and
// updated: they become the merge of what they held with this block's attention (start them at 0
// and -inf; merged in any order, every block of a sequence gives attention over all of it). A
// row that sees no key of the block keeps what it held.
struct AttentionBlockForwardOp {
  static constexpr const char* kName = "attention_block_forward";
  Tensor out, lse, qkv, kv, q_pos, k_pos, q_doc;
  int n_head = 0;
  int n_kv_head = 0;
};
// The gradient through one block, given the merged forward's out (B*Tq, H*D) f32 and lse, and
// dout (B*Tq, H*D) act: dq (B*Tq, H*D) f32 += this block's share of dQ, dkv (B*Tk, 2*Hkv*D) f32
// += dK and dV of the block's keys (summed over the group of query heads); the rest as the
// forward's. Over every block, dq is attention's dQ and each block's dkv its dK and dV.
struct AttentionBlockBackwardOp {
  static constexpr const char* kName = "attention_block_backward";
  Tensor dq, dkv, dout, qkv, kv, out, lse, q_pos, k_pos, q_doc;
  int n_head = 0;
  int n_kv_head = 0;
};

}  // namespace trainer

#define TRAINER_ATTENTION_BLOCK_OPS(X)                                                  \
  X(AttentionBlockForwardOp, void, heads_of(op.qkv, op.n_head, op.n_kv_head))          \
  X(AttentionBlockBackwardOp, void, heads_of(op.qkv, op.n_head, op.n_kv_head))
