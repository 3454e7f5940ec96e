// The contracts of the Llama ops (backend_llama_ops.h), checked by the front doors of
// backend_ops.cpp like every other op's; internal to kernels/. check_qkv is the attention
// layout's check they share with attention (backend_ops.cpp).
#pragma once

#include "kernels/arg_check.h"
#include "kernels/backend.h"

namespace trainer {

namespace op_check {
// qkv (B, T, (H + 2*Hkv)*D) with D >= 1, n_kv_head 0 (= n_head) or a divisor of n_head;
// returns the dimensions.
AttentionDims check_qkv(const char* name, const Tensor& qkv, int n_head, int n_kv_head, ArgCheck& k);
}  // namespace op_check

void check(const RmsnormForwardOp& op, op_check::ArgCheck& k);
void check(const RmsnormBackwardOp& op, op_check::ArgCheck& k);
void check(const HeadRmsnormForwardOp& op, op_check::ArgCheck& k);
void check(const HeadRmsnormBackwardOp& op, op_check::ArgCheck& k);
void check(const RopeForwardOp& op, op_check::ArgCheck& k);
void check(const RopeBackwardOp& op, op_check::ArgCheck& k);
void check(const SwigluForwardOp& op, op_check::ArgCheck& k);
void check(const SwigluBackwardOp& op, op_check::ArgCheck& k);

}  // namespace trainer
