// The contracts of AdamW's single- and multi-tensor forms and of sum_squares_many
// (backend_multi_tensor_ops.h), checked by the front doors of backend_ops.cpp like every other
// op's; internal to kernels/.
#pragma once

#include "kernels/arg_check.h"
#include "kernels/backend.h"

namespace trainer {

void check(const AdamWOp& op, op_check::ArgCheck& k);
// Each piece as an AdamWOp, the shared step, and no output of one piece overlapping another
// piece's tensors.
void check(const AdamWManyOp& op, op_check::ArgCheck& k);
// Each tensor as sum_squares's x, all of one dtype.
void check(const SumSquaresManyOp& op, op_check::ArgCheck& k);

}  // namespace trainer
