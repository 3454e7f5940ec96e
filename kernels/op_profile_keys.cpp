// Profile keys and FLOPs per op (see op_profile_keys.h).
#include "kernels/op_profile_keys.h"

#include <string>

namespace trainer::op_profile {

namespace {

std::string shape_of(const Tensor& t) { return t.shape_str() + " " + dtype_name(t.dtype); }
std::string heads_of(const Tensor& qkv, int n_head, int n_kv_head) {
  std::string s = shape_of(qkv) + " heads=" + std::to_string(n_head);
  if (n_kv_head > 0 && n_kv_head != n_head) s += " kv_heads=" + std::to_string(n_kv_head);
  return s;
}

// B H T (T + 1) / 2 (query, key) pairs of a causal product, at 2 D FLOPs each.
double causal_pair_flops(const AttentionDims& s) {
  return double(s.B) * double(s.H) * double(s.T) * double(s.T + 1) * double(s.D);
}

}  // namespace

Key profile_key(const EncoderForwardOp& op) { return {op.kName, shape_of(op.out)}; }
Key profile_key(const EncoderBackwardOp& op) { return {op.kName, shape_of(op.dout)}; }
Key profile_key(const LayernormForwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const LayernormBackwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const MatmulOp& op) {
  // The QKV, MLP and head products of one model are separate rows.
  const MatmulDims d = matmul_dims(op);
  const bool dgelu = op.gelu_inp.defined(), dbias = op.dbias.defined();
  const char* name = op.gelu_out.defined()   ? "matmul+gelu"
                     : op.residual.defined() ? (op.bias.defined() ? "matmul+bias+residual" : "matmul+residual")
                     : op.bias.defined()     ? "matmul+bias"
                     : dgelu                 ? (dbias ? "matmul+dgelu+dbias" : "matmul+dgelu")
                     : dbias                 ? "matmul+dbias"
                     : op.dbias_a.defined()  ? "matmul+dbias_a"
                                             : "matmul";
  return {name, "M=" + std::to_string(d.M) + " N=" + std::to_string(d.N) + " K=" + std::to_string(d.K) + " " +
                    (op.ta == Transpose::none ? "N" : "T") + (op.tb == Transpose::none ? "N" : "T") + " " +
                    dtype_name(op.out.dtype)};
}
Key profile_key(const BiasBackwardOp& op) { return {op.kName, shape_of(op.dout)}; }
Key profile_key(const AttentionForwardOp& op) { return {op.kName, heads_of(op.qkv, op.n_head, op.n_kv_head)}; }
Key profile_key(const AttentionBackwardOp& op) { return {op.kName, heads_of(op.qkv, op.n_head, op.n_kv_head)}; }
Key profile_key(const AttentionCachedOp& op) { return {op.kName, heads_of(op.qkv, op.n_head, op.n_kv_head)}; }
Key profile_key(const RmsnormForwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const RmsnormBackwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const HeadRmsnormForwardOp& op) { return {op.kName, heads_of(op.inp, op.n_head, op.n_kv_head)}; }
Key profile_key(const HeadRmsnormBackwardOp& op) { return {op.kName, heads_of(op.inp, op.n_head, op.n_kv_head)}; }
Key profile_key(const RopeForwardOp& op) { return {op.kName, heads_of(op.inp, op.n_head, op.n_kv_head)}; }
Key profile_key(const RopeBackwardOp& op) { return {op.kName, heads_of(op.dout, op.n_head, op.n_kv_head)}; }
Key profile_key(const SwigluForwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const SwigluBackwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const GeluForwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const GeluBackwardOp& op) { return {op.kName, shape_of(op.inp)}; }
Key profile_key(const AddOp& op) { return {op.kName, shape_of(op.out)}; }
Key profile_key(const ScaleOp& op) { return {op.kName, shape_of(op.x)}; }
Key profile_key(const FillOp& op) { return {op.kName, shape_of(op.x)}; }
// One row for the whole init: its shapes are the parameter chunks.
Key profile_key(const InitNormalOp& op) { return {op.kName, "all parameters"}; }
Key profile_key(const CastOp& op) { return {op.kName, shape_of(op.src) + " -> " + dtype_name(op.dst.dtype)}; }
Key profile_key(const SumSquaresOp& op) { return {op.kName, shape_of(op.x)}; }
Key profile_key(const XentMaxOp& op) { return {op.kName, shape_of(op.logits)}; }
Key profile_key(const XentSumexpOp& op) { return {op.kName, shape_of(op.logits)}; }
Key profile_key(const XentLossOp& op) { return {op.kName, shape_of(op.losses)}; }
Key profile_key(const XentBackwardOp& op) { return {op.kName, shape_of(op.logits)}; }
Key profile_key(const XentFusedOp& op) {
  return {op.kName, shape_of(op.logits) + (op.grad == XentGrad::in_place ? " +grad" : "")};
}
// One row for all AdamW calls: their shapes are the parameter tensors, dozens of them.
Key profile_key(const AdamWOp& op) { return {op.kName, "all parameters"}; }
Key profile_key(const AdamWManyOp& op) { return {op.kName, "all parameters"}; }
Key profile_key(const SumSquaresManyOp& op) { return {op.kName, "all pieces"}; }

double op_flops(const MatmulOp& op) {
  const MatmulDims d = matmul_dims(op);
  return 2.0 * double(d.M) * double(d.N) * double(d.K);
}
double op_flops(const AttentionForwardOp& op) {
  return 2.0 * causal_pair_flops(attention_dims(op.qkv, op.n_head, op.n_kv_head));
}
double op_flops(const AttentionBackwardOp& op) {
  return 5.0 * causal_pair_flops(attention_dims(op.qkv, op.n_head, op.n_kv_head));
}
double op_flops(const AttentionCachedOp& op) {
  const AttentionDims s = attention_dims(op.qkv, op.n_head, op.n_kv_head);
  const double pairs = double(s.T) * double(op.past) + double(s.T) * double(s.T + 1) / 2;
  return 4.0 * double(s.B) * double(s.H) * double(s.D) * pairs;
}

}  // namespace trainer::op_profile
