// Profile keys and FLOPs per op (see op_profile_keys.h); the keys from the op list's `shape`
// column (op_list.h).
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

// The QKV, MLP and head products of one model are separate rows: by their dimensions,
// transposes and dtype, and (row_name) by their fused epilogue.
std::string matmul_shape(const MatmulOp& op) {
  const MatmulDims d = matmul_dims(op);
  return "M=" + std::to_string(d.M) + " N=" + std::to_string(d.N) + " K=" + std::to_string(d.K) + " " +
         (op.ta == Transpose::none ? "N" : "T") + (op.tb == Transpose::none ? "N" : "T") + " " +
         dtype_name(op.out.dtype);
}

// A row's name: the op's.
template <class Op>
const char* row_name(const Op&) {
  return Op::kName;
}
// A matmul's also names its epilogue.
const char* row_name(const MatmulOp& op) {
  const bool dgelu = op.gelu_inp.defined(), dbias = op.dbias.defined();
  return op.gelu_out.defined()   ? "matmul+gelu"
         : op.residual.defined() ? (op.bias.defined() ? "matmul+bias+residual" : "matmul+residual")
         : op.bias.defined()     ? "matmul+bias"
         : dgelu                 ? (dbias ? "matmul+dgelu+dbias" : "matmul+dgelu")
         : dbias                 ? "matmul+dbias"
         : op.dbias_a.defined()  ? "matmul+dbias_a"
                                 : "matmul";
}

// B H T (T + 1) / 2 (query, key) pairs of a causal product, at 2 D FLOPs each.
double causal_pair_flops(const AttentionDims& s) {
  return double(s.B) * double(s.H) * double(s.T) * double(s.T + 1) * double(s.D);
}

}  // namespace

#define TRAINER_DEFINE_PROFILE_KEY(Op, Result, ...) \
  Key profile_key(const Op& op) { return {row_name(op), __VA_ARGS__}; }
TRAINER_OPS(TRAINER_DEFINE_PROFILE_KEY)
#undef TRAINER_DEFINE_PROFILE_KEY

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
