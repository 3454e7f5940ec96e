// The Llama ops' contracts (see llama_op_checks.h): RMSNorm, per-head RMSNorm, rope, SwiGLU.
#include "kernels/llama_op_checks.h"

#include <string>

namespace trainer {

namespace {

using op_check::ArgCheck;
using op_check::check_qkv;
using op_check::Want;

constexpr op_check::Role kIn = op_check::Role::in;
constexpr op_check::Role kOut = op_check::Role::out;

}  // namespace

static void check_eps(float eps, ArgCheck& k) {
  k.that(eps > 0, "eps", [&] { return std::to_string(eps) + " must be positive"; });
}

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

// The per-head ops (head RMSNorm, rope) on a qkv tensor: the attention layout's dimensions.
static AttentionDims check_heads(const char* out_name, const Tensor& out, const char* in_name, const Tensor& in,
                          int n_head, int n_kv_head, ArgCheck& k) {
  const AttentionDims s = check_qkv(in_name, in, n_head, n_kv_head, k);
  k.matrix(out_name, out, s.B * s.T, s.width());
  k.in_place(out_name, in_name);
  return s;
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

static void check_rope(const char* out_name, const Tensor& out, const char* in_name, const Tensor& in,
                const Tensor& inv_freq, int n_head, int n_kv_head, int64_t pos_offset, ArgCheck& k) {
  k.arg(out_name, out, Want::act, kOut);
  k.arg(in_name, in, Want::act, kIn);
  k.arg("inv_freq", inv_freq, Want::f32, kIn);
  const AttentionDims s = check_heads(out_name, out, in_name, in, n_head, n_kv_head, k);
  k.that(s.D % 2 == 0, in_name, [&] { return "head size " + std::to_string(s.D) + " must be even"; });
  k.numel("inv_freq", inv_freq, s.D / 2);
  k.that(pos_offset >= 0, "pos_offset", [&] { return std::to_string(pos_offset) + " must be >= 0"; });
}

void check(const RopeForwardOp& op, ArgCheck& k) {
  check_rope("out", op.out, "inp", op.inp, op.inv_freq, op.n_head, op.n_kv_head, op.pos_offset, k);
}

void check(const RopeBackwardOp& op, ArgCheck& k) {
  check_rope("dinp", op.dinp, "dout", op.dout, op.inv_freq, op.n_head, op.n_kv_head, op.pos_offset, k);
}

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

}  // namespace trainer
