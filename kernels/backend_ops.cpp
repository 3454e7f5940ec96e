// The front doors of kernels/backend.h: Backend::run(op) for every op of the op list
// (op_list.h) = the one check of its contract (shapes, dtypes, devices, optional arguments,
// aliasing; op_checks.h), time when a profiler is attached (under op_profile_keys.h's key and
// FLOPs), compute. The contracts of the encoder, LayerNorm, matmul, attention, element-wise,
// init and cross-entropy ops are checked here; RMSNorm's, rope's, SwiGLU's, AdamW's and the
// multi-tensor ops' in their own *_op_checks.cpp.
// Every failure is a TRAINER_CHECK (std::logic_error: the caller broke the contract) whose
// message starts "<op>: <argument> ", so a bad call names itself. A call that passes costs a
// few comparisons per argument: nothing is allocated and no message is formatted.
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/backend.h"
#include "kernels/base/unwind_guard.h"
#include "kernels/op_checks.h"
#include "kernels/op_profile_keys.h"
#include "kernels/op_profiler.h"

namespace trainer {

int64_t matrix_cols(const Tensor& t) { return t.ndim == 0 ? 1 : t.shape[t.ndim - 1]; }

int64_t matrix_rows(const Tensor& t) {
  int64_t r = 1;
  for (int i = 0; i + 1 < t.ndim; ++i) r *= t.shape[i];
  return r;
}

MatmulDims matmul_dims(const MatmulOp& op) {
  const bool ta = op.ta == Transpose::transpose, tb = op.tb == Transpose::transpose;
  MatmulDims d;
  d.M = ta ? matrix_cols(op.a) : matrix_rows(op.a);
  d.K = ta ? matrix_rows(op.a) : matrix_cols(op.a);
  d.N = tb ? matrix_rows(op.b) : matrix_cols(op.b);
  return d;
}

AttentionDims attention_dims(const Tensor& qkv, int n_head, int n_kv_head) {
  AttentionDims d;
  d.B = qkv.shape[0];
  d.T = qkv.shape[1];
  d.H = n_head;
  d.Hkv = n_kv_head > 0 ? n_kv_head : n_head;
  const int64_t heads = d.H + 2 * d.Hkv;
  d.D = n_head > 0 ? qkv.shape[2] / heads : 0;
  return d;
}

namespace op_check {

AttentionDims check_qkv(const char* name, const Tensor& qkv, int n_head, int n_kv_head, ArgCheck& k) {
  k.exact(name, qkv, 3, "(B, T, (H + 2*Hkv)*D)");
  k.that(n_head > 0 && n_kv_head >= 0 && (n_kv_head == 0 || n_head % n_kv_head == 0), "n_kv_head", [&] {
    return std::to_string(n_kv_head) + " must be 0 or divide n_head " + std::to_string(n_head);
  });
  const int64_t heads = int64_t(n_head) + 2 * int64_t(n_kv_head > 0 ? n_kv_head : n_head);
  k.that(n_head > 0 && qkv.shape[2] > 0 && qkv.shape[2] % heads == 0, name, [&] {
    return qkv.shape_str() + ": n_head + 2 * n_kv_head (" + std::to_string(heads) +
           ") must divide its last dimension";
  });
  return attention_dims(qkv, n_head, n_kv_head);
}

namespace {

constexpr Role kIn = Role::in;
constexpr Role kOut = Role::out;
constexpr Presence kOptional = Presence::optional;

// logits (N, Vl) with 0 <= valid_cols <= Vl; maxes and the other per-row vectors (N). Returns N.
int64_t check_logit_rows(const Tensor& logits, int64_t valid_cols, const Tensor& maxes, ArgCheck& k) {
  k.that(valid_cols >= 0 && valid_cols <= matrix_cols(logits), "valid_cols", [&] {
    return std::to_string(valid_cols) + " outside [0, " + std::to_string(matrix_cols(logits)) + "] for logits " +
           logits.shape_str();
  });
  const int64_t N = matrix_rows(logits);
  k.numel("maxes", maxes, N);
  return N;
}

}  // namespace

// ---- the contracts (their structs state them in words) ----

void check(const EncoderForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("tokens", op.tokens, Want::i32, kIn);
  k.arg("wte", op.wte, Want::act, kIn);
  const bool wpe = k.arg("wpe", op.wpe, Want::act, kIn, kOptional);
  k.exact("tokens", op.tokens, 2, "(B, T)");
  const int64_t T = op.tokens.shape[1], C = matrix_cols(op.wte);
  k.matrix("out", op.out, op.tokens.numel(), C);
  if (wpe)
    k.that(matrix_rows(op.wpe) >= T && matrix_cols(op.wpe) == C, "wpe",
           [&] { return op.wpe.shape_str() + " should be (>= T, C)"; });
  if (k.arg("positions", op.positions, Want::i32, kIn, kOptional)) {
    k.that(wpe, "positions", [] { return std::string("needs wpe (they pick its rows)"); });
    k.numel("positions", op.positions, op.tokens.numel());
  }
}

void check(const EncoderBackwardOp& op, ArgCheck& k) {
  k.arg("dwte", op.dwte, Want::f32, kOut);
  const bool dwpe = k.arg("dwpe", op.dwpe, Want::f32, kOut, kOptional);
  if (dwpe) k.updates("dwpe");
  k.arg("dout", op.dout, Want::act, kIn);
  k.arg("tokens", op.tokens, Want::i32, kIn);
  k.exact("tokens", op.tokens, 2, "(B, T)");
  const int64_t T = op.tokens.shape[1], C = matrix_cols(op.dwte);
  k.matrix("dout", op.dout, op.tokens.numel(), C);
  if (dwpe)
    k.that(matrix_rows(op.dwpe) >= T && matrix_cols(op.dwpe) == C, "dwpe",
           [&] { return op.dwpe.shape_str() + " should be (>= T, C)"; });
  if (k.arg("positions", op.positions, Want::i32, kIn, kOptional)) {
    k.that(dwpe, "positions", [] { return std::string("needs dwpe (they pick its rows)"); });
    k.numel("positions", op.positions, op.tokens.numel());
  }
}

void check(const LayernormForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("mean", op.mean, Want::f32, kOut);
  k.arg("rstd", op.rstd, Want::f32, kOut);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("weight", op.weight, Want::act, kIn);
  k.arg("bias", op.bias, Want::act, kIn);
  const int64_t N = matrix_rows(op.inp), C = matrix_cols(op.inp);
  k.matrix("out", op.out, N, C);
  k.numel("mean", op.mean, N);
  k.numel("rstd", op.rstd, N);
  k.numel("weight", op.weight, C);
  k.numel("bias", op.bias, C);
}

void check(const LayernormBackwardOp& op, ArgCheck& k) {
  k.arg("dinp", op.dinp, Want::act, kOut);
  k.arg("dweight", op.dweight, Want::f32, kOut);
  k.arg("dbias", op.dbias, Want::f32, kOut);
  k.updates("dweight");
  k.updates("dbias");
  if (op.dinp_mode == Accumulate::add) k.updates("dinp");
  k.arg("dout", op.dout, Want::act, kIn);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("weight", op.weight, Want::act, kIn);
  k.arg("mean", op.mean, Want::f32, kIn);
  k.arg("rstd", op.rstd, Want::f32, kIn);
  const int64_t N = matrix_rows(op.inp), C = matrix_cols(op.inp);
  k.matrix("dinp", op.dinp, N, C);
  k.matrix("dout", op.dout, N, C);
  k.numel("dweight", op.dweight, C);
  k.numel("dbias", op.dbias, C);
  k.numel("weight", op.weight, C);
  k.numel("mean", op.mean, N);
  k.numel("rstd", op.rstd, N);
  k.in_place("dinp", "dout");
}

void check(const MatmulOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::float_any, kOut);
  k.arg("a", op.a, Want::act, kIn);
  k.arg("b", op.b, Want::act, kIn);
  const bool bias = k.arg("bias", op.bias, Want::act, kIn, kOptional);
  const bool gelu = k.arg("gelu_out", op.gelu_out, Want::float_any, kOut, kOptional);
  const bool residual = k.arg("residual", op.residual, Want::float_any, kIn, kOptional);
  const bool gelu_inp = k.arg("gelu_inp", op.gelu_inp, Want::float_any, kIn, kOptional);
  const bool dbias = k.arg("dbias", op.dbias, Want::f32, kOut, kOptional);
  const bool dbias_a = k.arg("dbias_a", op.dbias_a, Want::f32, kOut, kOptional);
  if (op.mode == Accumulate::add) k.updates("out");
  if (dbias) k.updates("dbias");
  if (dbias_a) k.updates("dbias_a");
  const MatmulDims d = matmul_dims(op);
  const bool tb = op.tb == Transpose::transpose;
  const int64_t b_k = tb ? matrix_cols(op.b) : matrix_rows(op.b);
  k.that(b_k == d.K, "b", [&] {
    return op.b.shape_str() + (tb ? "^T" : "") + " does not fit a " + op.a.shape_str() +
           (op.ta == Transpose::transpose ? "^T" : "") + ": inner dimensions differ";
  });
  k.matrix("out", op.out, d.M, d.N);
  if (bias) k.numel("bias", op.bias, d.N);
  if (gelu) {
    k.same_dtype("gelu_out", op.gelu_out, "out", op.out);
    k.matrix("gelu_out", op.gelu_out, d.M, d.N);
    k.that(op.mode == Accumulate::overwrite, "gelu_out", "needs Accumulate::overwrite");
  }
  if (residual) {
    k.same_dtype("residual", op.residual, "out", op.out);
    k.matrix("residual", op.residual, d.M, d.N);
    k.that(op.mode == Accumulate::overwrite, "residual", "needs Accumulate::overwrite");
    k.that(!gelu, "residual", "cannot be combined with gelu_out");
  }
  // The backward forms: the product is a GELU's dout, and its result a bias's.
  const auto backward_form = [&](const char* name) {
    k.that(op.mode == Accumulate::overwrite, name, "needs Accumulate::overwrite");
    k.that(!bias && !gelu && !residual, name, "cannot be combined with bias, gelu_out or residual");
  };
  if (gelu_inp) {
    k.same_dtype("gelu_inp", op.gelu_inp, "out", op.out);
    k.matrix("gelu_inp", op.gelu_inp, d.M, d.N);
    backward_form("gelu_inp");
  }
  if (dbias) {
    k.numel("dbias", op.dbias, d.N);
    backward_form("dbias");
  }
  // A weight gradient's product: a is the layer's output gradient, its column sums the bias's.
  if (dbias_a) {
    k.that(op.ta == Transpose::transpose, "dbias_a",
           "needs ta = transpose (a is the (K, M) gradient whose column sums it adds)");
    k.numel("dbias_a", op.dbias_a, d.M);
    k.that(!bias && !gelu && !residual && !gelu_inp && !dbias, "dbias_a",
           "cannot be combined with bias, gelu_out, residual, gelu_inp or dbias");
  }
}

void check(const BiasBackwardOp& op, ArgCheck& k) {
  k.arg("dbias", op.dbias, Want::f32, kOut);
  k.arg("dout", op.dout, Want::act, kIn);
  k.updates("dbias");
  k.numel("dbias", op.dbias, matrix_cols(op.dout));
}

void check(const AttentionForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("lse", op.lse, Want::f32, kOut);
  k.arg("qkv", op.qkv, Want::act, kIn);
  const AttentionDims s = check_qkv("qkv", op.qkv, op.n_head, op.n_kv_head, k);
  k.matrix("out", op.out, s.B * s.T, s.H * s.D);
  k.numel("lse", op.lse, s.B * s.H * s.T);
  if (k.arg("doc_start", op.doc_start, Want::i32, kIn, kOptional)) k.numel("doc_start", op.doc_start, s.B * s.T);
}

void check(const AttentionBackwardOp& op, ArgCheck& k) {
  k.arg("dqkv", op.dqkv, Want::act, kOut);
  k.arg("dout", op.dout, Want::act, kIn);
  k.arg("qkv", op.qkv, Want::act, kIn);
  k.arg("out", op.out, Want::act, kIn);
  k.arg("lse", op.lse, Want::f32, kIn);
  const AttentionDims s = check_qkv("qkv", op.qkv, op.n_head, op.n_kv_head, k);
  k.matrix("dqkv", op.dqkv, s.B * s.T, s.width());
  k.matrix("dout", op.dout, s.B * s.T, s.H * s.D);
  k.matrix("out", op.out, s.B * s.T, s.H * s.D);
  k.numel("lse", op.lse, s.B * s.H * s.T);
  if (k.arg("doc_start", op.doc_start, Want::i32, kIn, kOptional)) k.numel("doc_start", op.doc_start, s.B * s.T);
}

void check(const AttentionCachedOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("k_cache", op.k_cache, Want::act, kOut);
  k.arg("v_cache", op.v_cache, Want::act, kOut);
  k.arg("qkv", op.qkv, Want::act, kIn);
  const AttentionDims s = check_qkv("qkv", op.qkv, op.n_head, op.n_kv_head, k);
  k.matrix("out", op.out, s.B * s.T, s.H * s.D);
  // Not a structured binding: a lambda may not capture one before C++20 (clang).
  for (const auto& entry : {std::pair{"k_cache", &op.k_cache}, std::pair{"v_cache", &op.v_cache}}) {
    const char* name = entry.first;
    const Tensor& cache = *entry.second;
    k.exact(name, cache, 4, "(B, Hkv, Tmax, D)");
    k.that(cache.shape[0] == s.B && cache.shape[1] == s.Hkv && cache.shape[3] == s.D, name, [&] {
      return cache.shape_str() + " should be (" + std::to_string(s.B) + ", " + std::to_string(s.Hkv) + ", Tmax, " +
             std::to_string(s.D) + ")";
    });
  }
  const int64_t t_max = op.k_cache.shape[2];
  k.that(op.v_cache.shape[2] == t_max, "v_cache", [&] { return op.v_cache.shape_str() + ": Tmax differs from k_cache's"; });
  k.that(op.past >= 0 && op.past + s.T <= t_max, "past", [&] {
    return std::to_string(op.past) + " + " + std::to_string(s.T) + " new rows must lie in [0, Tmax = " +
           std::to_string(t_max) + "]";
  });
}

void check(const GeluForwardOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::act, kOut);
  k.arg("inp", op.inp, Want::act, kIn);
  k.numel("out", op.out, op.inp.numel());
  k.in_place("out", "inp");
}

void check(const GeluBackwardOp& op, ArgCheck& k) {
  k.arg("dinp", op.dinp, Want::act, kOut);
  k.arg("inp", op.inp, Want::act, kIn);
  k.arg("dout", op.dout, Want::act, kIn);
  k.numel("dinp", op.dinp, op.inp.numel());
  k.numel("dout", op.dout, op.inp.numel());
  k.in_place("dinp", "dout");
}

void check(const AddOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::float_any, kOut);
  k.arg("a", op.a, Want::float_any, kIn);
  k.arg("b", op.b, Want::float_any, kIn);
  k.numel("out", op.out, op.a.numel());
  k.numel("b", op.b, op.a.numel());
  k.in_place("out", "a");
  k.in_place("out", "b");
}

void check(const ScaleOp& op, ArgCheck& k) {
  k.arg("x", op.x, Want::float_any, kOut);
  k.updates("x");
}

void check(const FillOp& op, ArgCheck& k) { k.arg("x", op.x, Want::float_any, kOut); }

void check(const InitNormalOp& op, ArgCheck& k) {
  k.arg("out", op.out, Want::f32, kOut);
  k.that(op.fill.first >= 0, "first", [&] { return std::to_string(op.fill.first) + " is negative"; });
  k.that(op.fill.first <= (int64_t(1) << 62) - op.out.numel(), "first",
         [&] { return std::to_string(op.fill.first) + " + " + std::to_string(op.out.numel()) + " is past 2^62"; });
  k.that(std::isfinite(op.fill.std) && (op.fill.std == 0 || std::fabs(op.fill.std) >= 0x1p-60), "std",
         [&] { return std::to_string(op.fill.std) + " is not finite, or nonzero below 2^-60"; });
}

void check(const CastOp& op, ArgCheck& k) {
  k.arg("dst", op.dst, Want::cast, kOut);
  k.arg("src", op.src, Want::cast, kIn);
  k.numel("dst", op.dst, op.src.numel());
}

void check(const SumSquaresOp& op, ArgCheck& k) { k.arg("x", op.x, Want::float_any, kIn); }

void check(const XentMaxOp& op, ArgCheck& k) {
  k.arg("maxes", op.maxes, Want::f32, kOut);
  k.arg("logits", op.logits, Want::act, kIn);
  check_logit_rows(op.logits, op.valid_cols, op.maxes, k);
}

void check(const XentSumexpOp& op, ArgCheck& k) {
  k.arg("sumexp", op.sumexp, Want::f32, kOut);
  k.arg("target_logit", op.target_logit, Want::f32, kOut);
  k.arg("logits", op.logits, Want::act, kIn);
  k.arg("maxes", op.maxes, Want::f32, kIn);
  k.arg("targets", op.targets, Want::i32, kIn);
  const int64_t N = check_logit_rows(op.logits, op.valid_cols, op.maxes, k);
  k.numel("sumexp", op.sumexp, N);
  k.numel("target_logit", op.target_logit, N);
  k.numel("targets", op.targets, N);
}

void check(const XentLossOp& op, ArgCheck& k) {
  k.arg("losses", op.losses, Want::f32, kOut);
  k.arg("maxes", op.maxes, Want::f32, kIn);
  k.arg("sumexp", op.sumexp, Want::f32, kIn);
  k.arg("target_logit", op.target_logit, Want::f32, kIn);
  const int64_t N = op.losses.numel();
  k.numel("maxes", op.maxes, N);
  k.numel("sumexp", op.sumexp, N);
  k.numel("target_logit", op.target_logit, N);
}

void check(const XentBackwardOp& op, ArgCheck& k) {
  k.arg("dlogits", op.dlogits, Want::act, kOut);
  k.arg("logits", op.logits, Want::act, kIn);
  k.arg("maxes", op.maxes, Want::f32, kIn);
  k.arg("sumexp", op.sumexp, Want::f32, kIn);
  k.arg("targets", op.targets, Want::i32, kIn);
  const int64_t N = check_logit_rows(op.logits, op.valid_cols, op.maxes, k);
  k.matrix("dlogits", op.dlogits, N, matrix_cols(op.logits));
  k.numel("sumexp", op.sumexp, N);
  k.numel("targets", op.targets, N);
  k.in_place("dlogits", "logits");
}

void check(const XentFusedOp& op, ArgCheck& k) {
  k.arg("losses", op.losses, Want::f32, kOut);
  k.arg("logits", op.logits, Want::act, op.grad == XentGrad::in_place ? kOut : kIn);
  if (op.grad == XentGrad::in_place) k.updates("logits");
  k.arg("targets", op.targets, Want::i32, kIn);
  const int64_t N = matrix_rows(op.logits), V = matrix_cols(op.logits);
  k.that(op.valid_cols >= 1 && op.valid_cols <= V, "valid_cols", [&] {
    return std::to_string(op.valid_cols) + " outside [1, " + std::to_string(V) + "] for logits " +
           op.logits.shape_str();
  });
  k.numel("losses", op.losses, N);
  k.numel("targets", op.targets, N);
}

}  // namespace op_check

template <class Op>
auto Backend::enter(const Op& op) {
  using op_check::ArgCheck;
  using op_check::check;
  using op_profile::op_flops;
  using op_profile::profile_key;
  ArgCheck k(Op::kName, *this);
  check(op, k);
  k.check_aliases();
  if (capturing_) {
    if constexpr (!std::is_void_v<decltype(compute(op))>) {
      refuse_while_capturing(Op::kName);  // its result is a host value
    } else if (op_recording_) {
      op_recording_->push_back([this, op] { compute(op); });
      return;
    }
  }
  if (!profiler_) return compute(op);
  auto [name, shape] = profile_key(op);
  const OpCost cost{double(k.bytes_moved()), op_flops(op)};
  // The closing mark is recorded even when compute throws, so marks stay paired. A mark can
  // fail too (a device timer reports an earlier kernel's sticky error): see UnwindGuard.
  struct Close {
    OpProfiler* profiler;
    OpProfiler::Open open;
    UnwindGuard guard;
    ~Close() noexcept(false) { guard.close([this] { profiler->end(open); }, "op profiler: closing mark"); }
  } close{profiler_, profiler_->begin(name, std::move(shape), cost), {}};
  return compute(op);
}

#define TRAINER_DEFINE_RUN(Op, Result, ...) \
  Result Backend::run(const Op& op) { return enter(op); }
TRAINER_OPS(TRAINER_DEFINE_RUN)
#undef TRAINER_DEFINE_RUN

}  // namespace trainer
