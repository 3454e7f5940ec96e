// The contract of the rotary embedding, forward and backward (backend_rope_ops.h), checked by
// the front doors of backend_ops.cpp like every other op's (op_checks.h).
#include <string>

#include "kernels/op_checks.h"

namespace trainer::op_check {

namespace {

constexpr Role kIn = Role::in;
constexpr Role kOut = Role::out;

// Both directions: out is in rotated (forward) or rotated back (backward), in place allowed.
void check_rope(const char* out_name, const Tensor& out, const char* in_name, const Tensor& in,
                const Tensor& inv_freq, int n_head, int n_kv_head, int64_t pos_offset, const Tensor& positions,
                ArgCheck& k) {
  k.arg(out_name, out, Want::act, kOut);
  k.arg(in_name, in, Want::act, kIn);
  k.arg("inv_freq", inv_freq, Want::f32, kIn);
  const AttentionDims s = check_qkv(in_name, in, n_head, n_kv_head, k);
  k.matrix(out_name, out, s.B * s.T, s.width());
  k.in_place(out_name, in_name);
  k.that(s.D % 2 == 0, in_name, [&] { return "head size " + std::to_string(s.D) + " must be even"; });
  k.numel("inv_freq", inv_freq, s.D / 2);
  k.that(pos_offset >= 0, "pos_offset", [&] { return std::to_string(pos_offset) + " must be >= 0"; });
  if (k.arg("positions", positions, Want::i32, kIn, Presence::optional)) {
    k.numel("positions", positions, s.B * s.T);
    k.that(pos_offset == 0, "pos_offset", [&] { return std::to_string(pos_offset) + " must be 0 with positions"; });
  }
}

}  // namespace

void check(const RopeForwardOp& op, ArgCheck& k) {
  check_rope("out", op.out, "inp", op.inp, op.inv_freq, op.n_head, op.n_kv_head, op.pos_offset, op.positions, k);
}

void check(const RopeBackwardOp& op, ArgCheck& k) {
  check_rope("dinp", op.dinp, "dout", op.dout, op.inv_freq, op.n_head, op.n_kv_head, op.pos_offset, op.positions,
             k);
}

}  // namespace trainer::op_check
