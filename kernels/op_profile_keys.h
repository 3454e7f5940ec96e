// What the op profiler files each call under (Backend::enter in backend_ops.cpp): the op's
// name and the shape that tells its calls apart ("matmul+bias", "M=4096 N=2304 K=768 NT bf16";
// the others by their main operand's shape, AdamW as one row), and the useful FLOPs a call
// computes, so that bench --profile's rows read as TFLOP/s.
#pragma once

#include <string>
#include <utility>

#include "kernels/backend.h"

namespace trainer::op_profile {

using Key = std::pair<const char*, std::string>;

Key profile_key(const EncoderForwardOp& op);
Key profile_key(const EncoderBackwardOp& op);
Key profile_key(const LayernormForwardOp& op);
Key profile_key(const LayernormBackwardOp& op);
Key profile_key(const MatmulOp& op);
Key profile_key(const BiasBackwardOp& op);
Key profile_key(const AttentionForwardOp& op);
Key profile_key(const AttentionBackwardOp& op);
Key profile_key(const AttentionCachedOp& op);
Key profile_key(const RmsnormForwardOp& op);
Key profile_key(const RmsnormBackwardOp& op);
Key profile_key(const HeadRmsnormForwardOp& op);
Key profile_key(const HeadRmsnormBackwardOp& op);
Key profile_key(const RopeForwardOp& op);
Key profile_key(const RopeBackwardOp& op);
Key profile_key(const SwigluForwardOp& op);
Key profile_key(const SwigluBackwardOp& op);
Key profile_key(const GeluForwardOp& op);
Key profile_key(const GeluBackwardOp& op);
Key profile_key(const AddOp& op);
Key profile_key(const ScaleOp& op);
Key profile_key(const FillOp& op);
Key profile_key(const InitNormalOp& op);
Key profile_key(const CastOp& op);
Key profile_key(const SumSquaresOp& op);
Key profile_key(const XentMaxOp& op);
Key profile_key(const XentSumexpOp& op);
Key profile_key(const XentLossOp& op);
Key profile_key(const XentBackwardOp& op);
Key profile_key(const XentFusedOp& op);
Key profile_key(const AdamWOp& op);
Key profile_key(const AdamWManyOp& op);
Key profile_key(const SumSquaresManyOp& op);

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
