// The contract checks of the front doors (backend_ops.cpp): one op_check::check(op, k) per op
// of the op list (op_list.h), declared here from the list and defined next to their kin
// (backend_ops.cpp, rmsnorm_op_checks.cpp, rope_op_checks.cpp, swiglu_op_checks.cpp,
// multi_tensor_op_checks.cpp); internal to kernels/. Each states in code the contract its
// struct's comment states in words, through ArgCheck, so a broken call fails with
// "<op>: <argument> ...".
#pragma once

#include "kernels/arg_check.h"
#include "kernels/backend.h"

namespace trainer::op_check {

#define TRAINER_DECLARE_CHECK(Op, Result, ...) void check(const Op& op, ArgCheck& k);
TRAINER_OPS(TRAINER_DECLARE_CHECK)
#undef TRAINER_DECLARE_CHECK

// qkv (B, T, (H + 2*Hkv)*D) with D >= 1, n_kv_head 0 (= n_head) or a divisor of n_head;
// returns the dimensions. Attention's and the per-head ops' (head RMSNorm, rope) shared check.
AttentionDims check_qkv(const char* name, const Tensor& qkv, int n_head, int n_kv_head, ArgCheck& k);

}  // namespace trainer::op_check
