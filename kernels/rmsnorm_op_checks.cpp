// The contracts of RMSNorm and the per-head RMSNorm (backend_rmsnorm_ops.h), checked by the
// front doors of backend_ops.cpp like every other op's (op_checks.h).
#include <string>

#include "kernels/op_checks.h"

namespace trainer::op_check {

namespace {

constexpr Role kIn = Role::in;
constexpr Role kOut = Role::out;

void check_eps(float eps, ArgCheck& k) {
  k.that(eps > 0, "eps", [&] { return std::to_string(eps) + " must be positive"; });
}

}  // namespace

void check(const RmsnormForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("rstd", op.rstd, Want::f32, kOut);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("weight", op.weight, Want::act, kIn);
  const int64_t N = matrix_rows(op.inp), C = matrix_cols(op.inp);
  k.matrix("out", op.out, N, C);
  k.numel("rstd", op.rstd, N);
  k.numel("weight", op.weight, C);
  check_eps(op.eps, k);
}

void check(const RmsnormBackwardOp& op, ArgCheck& k) {
  k.arg("dinp", op.dinp, Want::act, kOut);
  k.arg("dweight", op.dweight, Want::f32, kOut);
  k.updates("dweight");
  if (op.dinp_mode == Accumulate::add) k.updates("dinp");
  k.arg("dout", op.dout, Want::act, kIn);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("weight", op.weight, Want::act, kIn);
  k.arg("rstd", op.rstd, Want::f32, kIn);
  const int64_t N = matrix_rows(op.inp), C = matrix_cols(op.inp);
  k.matrix("dinp", op.dinp, N, C);
  k.matrix("dout", op.dout, N, C);
  k.numel("dweight", op.dweight, C);
  k.numel("weight", op.weight, C);
  k.numel("rstd", op.rstd, N);
  k.in_place("dinp", "dout");
}

void check(const HeadRmsnormForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("rstd", op.rstd, Want::f32, kOut);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("q_weight", op.q_weight, Want::act, kIn);
  k.arg("k_weight", op.k_weight, Want::act, kIn);
  const AttentionDims s = check_qkv("inp", op.inp, op.n_head, op.n_kv_head, k);
  k.matrix("out", op.out, s.B * s.T, s.width());
  k.numel("rstd", op.rstd, s.B * s.T * (s.H + s.Hkv));
  k.numel("q_weight", op.q_weight, s.D);
  k.numel("k_weight", op.k_weight, s.D);
  check_eps(op.eps, k);
}

void check(const HeadRmsnormBackwardOp& op, ArgCheck& k) {
  k.arg("dinp", op.dinp, Want::act, kOut);
  k.arg("dq_weight", op.dq_weight, Want::f32, kOut);
  k.arg("dk_weight", op.dk_weight, Want::f32, kOut);
  k.updates("dq_weight");
  k.updates("dk_weight");
  k.arg("dout", op.dout, Want::act, kIn);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("q_weight", op.q_weight, Want::act, kIn);
  k.arg("k_weight", op.k_weight, Want::act, kIn);
  k.arg("rstd", op.rstd, Want::f32, kIn);
  const AttentionDims s = check_qkv("inp", op.inp, op.n_head, op.n_kv_head, k);
  k.matrix("dinp", op.dinp, s.B * s.T, s.width());
  k.matrix("dout", op.dout, s.B * s.T, s.width());
  k.numel("rstd", op.rstd, s.B * s.T * (s.H + s.Hkv));
  k.numel("q_weight", op.q_weight, s.D);
  k.numel("k_weight", op.k_weight, s.D);
  k.numel("dq_weight", op.dq_weight, s.D);
  k.numel("dk_weight", op.dk_weight, s.D);
  k.in_place("dinp", "dout");
}

}  // namespace trainer::op_check
