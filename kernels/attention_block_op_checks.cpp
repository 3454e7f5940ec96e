// The contract of ring attention's block ops (backend_attention_block_ops.h), checked by the
// front doors of backend_ops.cpp like every other op's (op_checks.h).
#include <string>

#include "kernels/op_checks.h"

namespace trainer::op_check {

namespace {

constexpr Role kIn = Role::in;
constexpr Role kOut = Role::out;

// The inputs both directions share: qkv's rows against kv's, with their positions. Returns
// the query side's dimensions; *Tk gets the block's key rows.
AttentionDims check_block_inputs(const Tensor& qkv, const Tensor& kv, const Tensor& q_pos, const Tensor& k_pos,
                                 const Tensor& q_doc, int n_head, int n_kv_head, int64_t* Tk, ArgCheck& k) {
  k.arg("qkv", qkv, Want::act, kIn);
  k.arg("kv", kv, Want::act, kIn);
  k.arg("q_pos", q_pos, Want::i32, kIn);
  k.arg("k_pos", k_pos, Want::i32, kIn);
  const bool doc = k.arg("q_doc", q_doc, Want::i32, kIn, Presence::optional);
  const AttentionDims s = check_qkv("qkv", qkv, n_head, n_kv_head, k);
  k.exact("kv", kv, 3, "(B, Tk, 2*Hkv*D)");
  k.that(kv.shape[0] == s.B && kv.shape[2] == 2 * s.Hkv * s.D, "kv",
         [&] { return kv.shape_str() + " should be (" + std::to_string(s.B) + ", Tk, " + std::to_string(2 * s.Hkv * s.D) + ")"; });
  *Tk = kv.ndim == 3 ? kv.shape[1] : 0;
  k.numel("q_pos", q_pos, s.B * s.T);
  k.numel("k_pos", k_pos, s.B * *Tk);
  if (doc) k.numel("q_doc", q_doc, s.B * s.T);
  return s;
}

}  // namespace

void check(const AttentionBlockForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::f32, kOut);
  k.arg("lse", op.lse, Want::f32, kOut);
  k.updates("out");
  k.updates("lse");
  int64_t Tk = 0;
  const AttentionDims s = check_block_inputs(op.qkv, op.kv, op.q_pos, op.k_pos, op.q_doc, op.n_head, op.n_kv_head, &Tk, k);
  k.matrix("out", op.out, s.B * s.T, s.H * s.D);
  k.numel("lse", op.lse, s.B * s.H * s.T);
}

void check(const AttentionBlockBackwardOp& op, ArgCheck& k) {
  k.arg("dq", op.dq, Want::f32, kOut);
  k.arg("dkv", op.dkv, Want::f32, kOut);
  k.updates("dq");
  k.updates("dkv");
  k.arg("dout", op.dout, Want::act, kIn);
  k.arg("out", op.out, Want::f32, kIn);
  k.arg("lse", op.lse, Want::f32, kIn);
  int64_t Tk = 0;
  const AttentionDims s = check_block_inputs(op.qkv, op.kv, op.q_pos, op.k_pos, op.q_doc, op.n_head, op.n_kv_head, &Tk, k);
  k.matrix("dq", op.dq, s.B * s.T, s.H * s.D);
  k.matrix("dkv", op.dkv, s.B * Tk, 2 * s.Hkv * s.D);
  k.matrix("dout", op.dout, s.B * s.T, s.H * s.D);
  k.matrix("out", op.out, s.B * s.T, s.H * s.D);
  k.numel("lse", op.lse, s.B * s.H * s.T);
}

}  // namespace trainer::op_check
