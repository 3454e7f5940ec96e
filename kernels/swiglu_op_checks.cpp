// The contract of SwiGLU, forward and backward (backend_swiglu_ops.h), checked by the front
// doors of backend_ops.cpp like every other op's (op_checks.h).
#include <string>

#include "kernels/op_checks.h"

namespace trainer::op_check {

namespace {

constexpr Role kIn = Role::in;
constexpr Role kOut = Role::out;

}  // namespace

void check(const SwigluForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("inp", op.inp, Want::act, kIn);
  const int64_t N = matrix_rows(op.inp), F2 = matrix_cols(op.inp);
  k.that(F2 % 2 == 0, "inp", [&] { return op.inp.shape_str() + " should be (N, 2F): its width is odd"; });
  k.matrix("out", op.out, N, F2 / 2);
}

void check(const SwigluBackwardOp& op, ArgCheck& k) {
  k.arg("dinp", op.dinp, Want::act, kOut);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("dout", op.dout, Want::act, kIn);
  const int64_t N = matrix_rows(op.inp), F2 = matrix_cols(op.inp);
  k.that(F2 % 2 == 0, "inp", [&] { return op.inp.shape_str() + " should be (N, 2F): its width is odd"; });
  k.matrix("dinp", op.dinp, N, F2);
  k.matrix("dout", op.dout, N, F2 / 2);
}

}  // namespace trainer::op_check
