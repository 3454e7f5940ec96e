// What the op profiler files each call under (Backend::enter in backend_ops.cpp): the op's
// name and the shape that tells its calls apart ("matmul+bias", "M=4096 N=2304 K=768 NT bf16";
// the others by their main operand's shape, AdamW as one row), as the op list's `shape` column
// (op_list.h) spells it, and the useful FLOPs a call computes, so that bench --profile's rows
// read as TFLOP/s.
#pragma once

#include <string>
#include <utility>

#include "kernels/backend.h"

namespace trainer::op_profile {

using Key = std::pair<const char*, std::string>;

// One per op of the op list (op_list.h), from its `shape` column.
#define TRAINER_DECLARE_PROFILE_KEY(Op, Result, ...) Key profile_key(const Op& op);
TRAINER_OPS(TRAINER_DECLARE_PROFILE_KEY)
#undef TRAINER_DECLARE_PROFILE_KEY

// The arithmetic of the calls that do enough to matter (bench --profile's TFLOP/s); 0 for the
// memory-bound rest. A product is 2 M N K. Causal attention counts the unmasked part of its
// square products, T (T + 1) / 2 (query, key) pairs per head at 2 D each: the forward's two
// (Q K^T, P V), the backward's five (FlashAttention-2's count: S again, dP, dV, dQ, dK; our
// split backward recomputes two more, which are not useful work). A cached call's n new rows
// see past + 1 .. past + n keys.
template <class Op>
double op_flops(const Op&) {
  return 0;
}
double op_flops(const MatmulOp& op);
double op_flops(const AttentionForwardOp& op);
double op_flops(const AttentionBackwardOp& op);
double op_flops(const AttentionCachedOp& op);

}  // namespace trainer::op_profile
