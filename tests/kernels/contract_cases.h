// The Backend contract as a table: for every op one valid call and calls that each break the
// contract in one way (a wrong shape, a wrong dtype, a tensor on the wrong device, a forbidden
// alias, a missing required argument). The front door must accept the first and reject every
// other with std::logic_error whose message starts "<op>: <argument> ". One table for every
// backend: tests/kernels/test_backend_contract.cpp runs it on the CPU backend,
// tests/kernels/cuda/test_cuda_contract.cpp on the CUDA backend in both precisions.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"

namespace trainer::testing {

enum class Broken : uint8_t { nothing, shape, dtype, device, alias, missing };

inline const char* broken_name(Broken b) {
  switch (b) {
    case Broken::nothing: return "valid";
    case Broken::shape: return "shape";
    case Broken::dtype: return "dtype";
    case Broken::device: return "device";
    case Broken::alias: return "alias";
    case Broken::missing: return "missing";
  }
  return "?";
}

// Zero-filled tensors of one call on one backend.
class ContractPool {
 public:
  explicit ContractPool(Backend& backend) : backend_(backend) {}
  Tensor act(std::initializer_list<int64_t> shape) { return make(backend_.act_dtype(), shape); }
  Tensor f32(std::initializer_list<int64_t> shape) { return make(DType::f32, shape); }
  Tensor i32(std::initializer_list<int64_t> shape) { return make(DType::i32, shape); }

 private:
  Tensor make(DType dtype, std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    buffers_.push_back(backend_.alloc(size_t(n) * dtype_size(dtype)));
    backend_.memset_zero(buffers_.back().data(), buffers_.back().bytes());
    return buffers_.back().tensor(dtype, shape);
  }
  Backend& backend_;
  std::vector<Buffer> buffers_;
};

struct ContractCase {
  const char* op;
  std::string arg;  // the argument the call gets wrong; empty for the valid call
  Broken broken;
  std::function<void(Backend&, ContractPool&)> call;
};

// One way to break an op of type Op.
template <class Op>
struct Break {
  std::string arg;
  Broken broken;
  std::function<void(Op&)> mutate;
};

template <class Op>
Break<Op> wrong_shape(const char* arg, Tensor Op::*t) {
  return {arg, Broken::shape, [t](Op& op) { (op.*t).shape[(op.*t).ndim - 1] += 1; }};
}
template <class Op>
Break<Op> wrong_dtype(const char* arg, Tensor Op::*t) {
  return {arg, Broken::dtype, [t](Op& op) { (op.*t).dtype = (op.*t).dtype == DType::i32 ? DType::f32 : DType::i32; }};
}
template <class Op>
Break<Op> wrong_device(const char* arg, Tensor Op::*t) {
  return {arg, Broken::device,
          [t](Op& op) { (op.*t).device = (op.*t).device == Device::cpu ? Device::cuda : Device::cpu; }};
}
// The output starts one element into `in`: a partial overlap, which no op allows.
template <class Op>
Break<Op> alias(const char* out_arg, Tensor Op::*out, Tensor Op::*in) {
  return {out_arg, Broken::alias,
          [out, in](Op& op) { (op.*out).data = static_cast<char*>((op.*in).data) + dtype_size((op.*in).dtype); }};
}
template <class Op>
Break<Op> missing(const char* arg, Tensor Op::*t) {
  return {arg, Broken::missing, [t](Op& op) { op.*t = Tensor{}; }};
}
// Any other broken rule of the op (a scalar out of range), reported under `arg`.
template <class Op>
Break<Op> other(const char* arg, std::function<void(Op&)> mutate) {
  return {arg, Broken::shape, std::move(mutate)};
}

template <class Op>
void add_op(std::vector<ContractCase>& cases, std::function<Op(ContractPool&)> valid, std::vector<Break<Op>> breaks) {
  cases.push_back({Op::kName, "", Broken::nothing, [valid](Backend& be, ContractPool& p) { be.run(valid(p)); }});
  for (Break<Op>& b : breaks)
    cases.push_back({Op::kName, b.arg, b.broken, [valid, mutate = b.mutate](Backend& be, ContractPool& p) {
                       Op op = valid(p);
                       mutate(op);
                       be.run(op);
                     }});
}

// RMSNorm, the per-head RMSNorm, rope, SwiGLU and attention with grouped k/v heads. Shapes:
// B = 2, T = 3, N = 6; qkv (2, 3, 8) holds H = 2 query heads and Hkv = 1 k/v head of D = 2
// (multi-query), or H = 4 and Hkv = 2 of D = 1; SwiGLU F = 3. In-place forms the contract
// allows are valid calls of their own.
inline void add_rmsnorm_rope_swiglu_contract_cases(std::vector<ContractCase>& c) {
  using A = AttentionForwardOp;
  using AB = AttentionBackwardOp;
  using R = RmsnormForwardOp;
  using RB = RmsnormBackwardOp;
  using HR = HeadRmsnormForwardOp;
  using HRB = HeadRmsnormBackwardOp;
  using P = RopeForwardOp;
  using PB = RopeBackwardOp;
  using S = SwigluForwardOp;
  using SB = SwigluBackwardOp;
  add_op<A>(c, [](ContractPool& p) { return A{p.act({2, 3, 4}), p.f32({2, 2, 3}), p.act({2, 3, 8}), 2, 1}; },
            {wrong_shape("qkv", &A::qkv), wrong_shape("lse", &A::lse), other<A>("n_kv_head", [](A& op) { op.n_kv_head = 3; }),
             other<A>("n_kv_head", [](A& op) { op.n_kv_head = -1; })});
  add_op<A>(c, [](ContractPool& p) { return A{p.act({2, 3, 4}), p.f32({2, 4, 3}), p.act({2, 3, 8}), 4, 2}; },
            {wrong_shape("out", &A::out), other<A>("qkv", [](A& op) { op.n_kv_head = 0; })});
  add_op<AB>(c,
             [](ContractPool& p) {
               return AB{p.act({2, 3, 8}), p.act({2, 3, 4}), p.act({2, 3, 8}), p.act({2, 3, 4}), p.f32({2, 4, 3}), 4, 2};
             },
             {wrong_shape("dqkv", &AB::dqkv), wrong_shape("out", &AB::out),
              other<AB>("n_kv_head", [](AB& op) { op.n_kv_head = 3; })});
  add_op<R>(c, [](ContractPool& p) { return R{p.act({6, 4}), p.f32({6}), p.act({6, 4}), p.act({4}), 1e-5f}; },
            {wrong_shape("weight", &R::weight), wrong_shape("out", &R::out), wrong_dtype("rstd", &R::rstd),
             wrong_device("inp", &R::inp), alias("out", &R::out, &R::inp), missing("weight", &R::weight),
             other<R>("eps", [](R& op) { op.eps = 0; })});
  auto rb = [](ContractPool& p) {
    return RB{p.act({6, 4}), p.f32({4}), p.act({6, 4}), p.act({6, 4}), p.act({4}), p.f32({6}), Accumulate::add};
  };
  add_op<RB>(c, rb,
             {wrong_shape("dweight", &RB::dweight), wrong_shape("rstd", &RB::rstd), wrong_dtype("dweight", &RB::dweight),
              wrong_device("dout", &RB::dout), alias("dinp", &RB::dinp, &RB::inp), alias("dinp", &RB::dinp, &RB::dout),
              missing("rstd", &RB::rstd)});
  add_op<RB>(c, [rb](ContractPool& p) { RB op = rb(p); op.dinp = op.dout; return op; }, {});
  add_op<HR>(c,
             [](ContractPool& p) { return HR{p.act({2, 3, 8}), p.f32({18}), p.act({2, 3, 8}), p.act({2}), p.act({2}), 2, 1, 1e-6f}; },
             {wrong_shape("rstd", &HR::rstd), wrong_shape("k_weight", &HR::k_weight), wrong_shape("inp", &HR::inp),
              wrong_dtype("q_weight", &HR::q_weight), wrong_device("out", &HR::out), alias("out", &HR::out, &HR::inp),
              other<HR>("n_kv_head", [](HR& op) { op.n_kv_head = 3; }), other<HR>("eps", [](HR& op) { op.eps = -1; })});
  auto hrb = [](ContractPool& p) {
    return HRB{p.act({6, 8}), p.f32({2}), p.f32({2}), p.act({2, 3, 8}), p.act({2, 3, 8}), p.act({2}), p.act({2}),
               p.f32({18}), 2, 1};
  };
  add_op<HRB>(c, hrb,
              {wrong_shape("dinp", &HRB::dinp), wrong_shape("dk_weight", &HRB::dk_weight), wrong_dtype("rstd", &HRB::rstd),
               wrong_device("dout", &HRB::dout), alias("dinp", &HRB::dinp, &HRB::inp),
               alias("dinp", &HRB::dinp, &HRB::dout), missing("q_weight", &HRB::q_weight)});
  add_op<HRB>(c, [hrb](ContractPool& p) { HRB op = hrb(p); op.dinp = op.dout; return op; }, {});
  auto rope = [](ContractPool& p) { return P{p.act({2, 3, 8}), p.act({2, 3, 8}), p.f32({1}), 2, 1, 5}; };
  add_op<P>(c, rope,
            {wrong_shape("inv_freq", &P::inv_freq), wrong_shape("out", &P::out), wrong_dtype("inv_freq", &P::inv_freq),
             wrong_device("out", &P::out), alias("out", &P::out, &P::inp), missing("inv_freq", &P::inv_freq),
             other<P>("pos_offset", [](P& op) { op.pos_offset = -1; }),
             other<P>("inp", [](P& op) { op.inp.shape[2] = op.out.shape[2] = 12; })});  // head size 3: odd
  add_op<P>(c, [rope](ContractPool& p) { P op = rope(p); op.out = op.inp; return op; }, {});
  auto rope_b = [](ContractPool& p) { return PB{p.act({6, 8}), p.act({2, 3, 8}), p.f32({1}), 2, 1, 0}; };
  add_op<PB>(c, rope_b,
             {wrong_shape("dinp", &PB::dinp), wrong_dtype("dout", &PB::dout), wrong_device("inv_freq", &PB::inv_freq),
              alias("dinp", &PB::dinp, &PB::dout), other<PB>("n_kv_head", [](PB& op) { op.n_kv_head = 3; })});
  add_op<PB>(c, [rope_b](ContractPool& p) { PB op = rope_b(p); op.dinp = op.dout; return op; }, {});
  add_op<S>(c, [](ContractPool& p) { return S{p.act({6, 3}), p.act({6, 6})}; },
            {wrong_shape("out", &S::out), wrong_dtype("inp", &S::inp), wrong_device("out", &S::out),
             alias("out", &S::out, &S::inp), missing("inp", &S::inp), other<S>("inp", [](S& op) { op.inp.shape[1] = 5; })});
  add_op<SB>(c, [](ContractPool& p) { return SB{p.act({6, 6}), p.act({6, 6}), p.act({6, 3})}; },
             {wrong_shape("dout", &SB::dout), wrong_shape("dinp", &SB::dinp), wrong_dtype("dinp", &SB::dinp),
              wrong_device("inp", &SB::inp), alias("dinp", &SB::dinp, &SB::inp), alias("dinp", &SB::dinp, &SB::dout)});
}

// The multi-tensor ops: adamw_many over a piece of 6 and one of 4 (the second with no copy),
// sum_squares_many over three act tensors. Each break names the argument of the piece it
// breaks; the pieces' own contracts are AdamWOp's and SumSquaresOp's.
inline void add_multi_tensor_contract_cases(std::vector<ContractCase>& c) {
  using AM = AdamWManyOp;
  using SM = SumSquaresManyOp;
  auto many = [](ContractPool& p) {
    AdamWStep h;
    AdamWStep h1 = h;
    h1.weight_decay = 0.1f;
    h1.offset = 6;
    return AM{{AdamWOp{p.f32({6}), p.f32({6}), p.f32({6}), p.f32({6}), p.act({6}), h},
               AdamWOp{p.f32({4}), p.f32({4}), p.f32({4}), p.f32({4}), Tensor{}, h1}}};
  };
  auto piece = [](int i, std::function<void(AdamWOp&)> f) { return [i, f](AM& op) { f(op.pieces[size_t(i)]); }; };
  add_op<AM>(c, many,
             {{"v", Broken::shape, piece(1, [](AdamWOp& q) { q.v.shape[0] = 5; })},
              {"param_copy", Broken::dtype, piece(0, [](AdamWOp& q) { q.param_copy.dtype = DType::i32; })},
              {"grad", Broken::device,
               piece(1, [](AdamWOp& q) { q.grad.device = q.grad.device == Device::cpu ? Device::cuda : Device::cpu; })},
              {"param_copy", Broken::alias,
               piece(0, [](AdamWOp& q) { q.param_copy.data = static_cast<char*>(q.grad.data) + 4; })},
              // Across pieces: piece 1's m starts one element into piece 0's param.
              {"param", Broken::alias,
               [](AM& op) { op.pieces[1].m.data = static_cast<char*>(op.pieces[0].param.data) + 4; }},
              {"grad", Broken::missing, piece(0, [](AdamWOp& q) { q.grad = Tensor{}; })},
              other<AM>("h", [](AM& op) { op.pieces[1].h.lr = 1e-3f; }),
              other<AM>("step", [](AM& op) { op.pieces[0].h.step = 0; })});
  add_op<AM>(c, [](ContractPool&) { return AM{}; }, {});
  auto sums = [](ContractPool& p) { return SM{{p.act({6}), p.act({1}), p.act({2, 3})}}; };
  add_op<SM>(c, sums,
             {{"xs", Broken::dtype, [](SM& op) { op.xs[1].dtype = DType::i32; }},
              {"xs", Broken::device,
               [](SM& op) { op.xs[2].device = op.xs[2].device == Device::cpu ? Device::cuda : Device::cpu; }},
              {"xs", Broken::missing, [](SM& op) { op.xs[0] = Tensor{}; }}});
  add_op<SM>(c, [](ContractPool&) { return SM{}; }, {});
}

// Ring attention's blocks: qkv (2, 3, 8) holds H = 2 query heads on Hkv = 1 k/v head of D = 2;
// the block kv (2, 5, 4) holds 5 keys; positions (2, 3) and (2, 5).
inline void add_attention_block_contract_cases(std::vector<ContractCase>& c) {
  using F = AttentionBlockForwardOp;
  using G = AttentionBlockBackwardOp;
  add_op<F>(c,
            [](ContractPool& p) {
              return F{p.f32({6, 4}), p.f32({2, 2, 3}), p.act({2, 3, 8}), p.act({2, 5, 4}), p.i32({2, 3}), p.i32({2, 5}),
                       p.i32({2, 3}), 2, 1};
            },
            {wrong_shape("out", &F::out), wrong_shape("lse", &F::lse), wrong_dtype("out", &F::out),
             wrong_shape("kv", &F::kv), wrong_shape("k_pos", &F::k_pos), wrong_shape("q_pos", &F::q_pos),
             wrong_dtype("q_doc", &F::q_doc), missing("k_pos", &F::k_pos), wrong_device("kv", &F::kv),
             other<F>("kv", [](F& op) { op.kv = op.kv.flat(0, 20).view({1, 5, 4}); }),
             alias("out", &F::out, &F::qkv), other<F>("n_kv_head", [](F& op) { op.n_kv_head = 3; })});
  add_op<G>(c,
            [](ContractPool& p) {
              return G{p.f32({6, 4}), p.f32({10, 4}), p.act({6, 4}), p.act({2, 3, 8}), p.act({2, 5, 4}), p.f32({6, 4}),
                       p.f32({2, 2, 3}), p.i32({2, 3}), p.i32({2, 5}), Tensor{}, 2, 1};
            },
            {wrong_shape("dq", &G::dq), wrong_shape("dkv", &G::dkv), wrong_dtype("dkv", &G::dkv),
             wrong_shape("dout", &G::dout), wrong_dtype("out", &G::out), wrong_shape("lse", &G::lse),
             missing("q_pos", &G::q_pos), wrong_device("qkv", &G::qkv), alias("dq", &G::dq, &G::out)});
}

// Attention over a KV cache: qkv (2, 3, 8) holds H = 2 query heads on Hkv = 1 k/v head of D = 2;
// the caches (2, 1, 5, 2) hold Tmax = 5 positions, 2 of them before the 3 new rows.
inline void add_generation_contract_cases(std::vector<ContractCase>& c) {
  using K = AttentionCachedOp;
  auto cached = [](ContractPool& p) { return K{p.act({6, 4}), p.act({2, 1, 5, 2}), p.act({2, 1, 5, 2}), p.act({2, 3, 8}), 2, 1, 2}; };
  add_op<K>(c, cached,
            {wrong_shape("out", &K::out), wrong_shape("k_cache", &K::k_cache), wrong_dtype("v_cache", &K::v_cache),
             wrong_device("qkv", &K::qkv), alias("out", &K::out, &K::qkv), alias("k_cache", &K::k_cache, &K::v_cache),
             missing("k_cache", &K::k_cache), other<K>("past", [](K& op) { op.past = 3; }),
             other<K>("past", [](K& op) { op.past = -1; }), other<K>("n_kv_head", [](K& op) { op.n_kv_head = 3; }),
             other<K>("k_cache", [](K& op) { op.k_cache.shape[1] = 2; }),
             other<K>("v_cache", [](K& op) { op.v_cache = op.v_cache.flat(0, 16).view({2, 1, 4, 2}); })});
}

// Shapes of the valid calls: B = 2, T = 3, C = 4 (2 heads of 2), vocabulary 5, N = B*T = 6.
inline std::vector<ContractCase> contract_cases() {
  using E = EncoderForwardOp;
  using EB = EncoderBackwardOp;
  using L = LayernormForwardOp;
  using LB = LayernormBackwardOp;
  using M = MatmulOp;
  using BB = BiasBackwardOp;
  using A = AttentionForwardOp;
  using AB = AttentionBackwardOp;
  using G = GeluForwardOp;
  using GB = GeluBackwardOp;
  using X = XentMaxOp;
  using XS = XentSumexpOp;
  using XL = XentLossOp;
  using XB = XentBackwardOp;
  std::vector<ContractCase> c;
  add_op<E>(c, [](ContractPool& p) { return E{p.act({2, 3, 4}), p.i32({2, 3}), p.act({5, 4}), p.act({3, 4}), 0}; },
            {wrong_shape("out", &E::out), wrong_dtype("tokens", &E::tokens), wrong_device("wte", &E::wte),
             alias("out", &E::out, &E::wte), missing("wte", &E::wte), wrong_shape("wpe", &E::wpe)});
  add_op<EB>(c, [](ContractPool& p) { return EB{p.f32({5, 4}), p.f32({3, 4}), p.act({2, 3, 4}), p.i32({2, 3}), 0}; },
             {wrong_shape("dwpe", &EB::dwpe), wrong_dtype("dwte", &EB::dwte), wrong_device("dout", &EB::dout),
              alias("dwte", &EB::dwte, &EB::dout), missing("tokens", &EB::tokens)});
  add_op<L>(c,
            [](ContractPool& p) { return L{p.act({6, 4}), p.f32({6}), p.f32({6}), p.act({6, 4}), p.act({4}), p.act({4})}; },
            {wrong_shape("bias", &L::bias), wrong_dtype("mean", &L::mean), wrong_device("inp", &L::inp),
             alias("out", &L::out, &L::inp), missing("rstd", &L::rstd)});
  add_op<LB>(c,
             [](ContractPool& p) {
               return LB{p.act({6, 4}), p.f32({4}), p.f32({4}), p.act({6, 4}), p.act({6, 4}),
                         p.act({4}),    p.f32({6}), p.f32({6}), Accumulate::add};
             },
             {wrong_shape("dweight", &LB::dweight), wrong_dtype("rstd", &LB::rstd), wrong_device("dout", &LB::dout),
              alias("dinp", &LB::dinp, &LB::inp), alias("dinp", &LB::dinp, &LB::dout), missing("mean", &LB::mean)});
  add_op<M>(c,
            [](ContractPool& p) {
              return M{p.act({2, 3}), p.act({2, 4}), p.act({3, 4}), Transpose::none, Transpose::transpose,
                       p.act({3}),    Accumulate::overwrite, p.act({2, 3}), Tensor{}, Tensor{}, Tensor{}, Tensor{}};
            },
            {wrong_shape("b", &M::b), wrong_shape("out", &M::out), wrong_dtype("bias", &M::bias),
             wrong_device("a", &M::a), alias("gelu_out", &M::gelu_out, &M::a), alias("out", &M::out, &M::b),
             missing("b", &M::b), other<M>("gelu_out", [](M& op) { op.mode = Accumulate::add; })});
  // With the residual instead of GELU.
  add_op<M>(c,
            [](ContractPool& p) {
              return M{p.act({2, 3}), p.act({2, 4}), p.act({3, 4}), Transpose::none, Transpose::transpose,
                       p.act({3}),    Accumulate::overwrite, Tensor{}, p.act({2, 3}), Tensor{}, Tensor{}, Tensor{}};
            },
            {wrong_shape("residual", &M::residual), wrong_dtype("residual", &M::residual),
             wrong_device("residual", &M::residual), alias("out", &M::out, &M::residual),
             other<M>("out", [](M& op) { op.residual = op.out; }),
             other<M>("residual", [](M& op) { op.mode = Accumulate::add; }),
             other<M>("residual", [](M& op) { op.gelu_out = op.residual; }),
             other<M>("residual", [](M& op) { op.residual.dtype = op.out.dtype == DType::f32 ? DType::bf16 : DType::f32; })});
  // The backward form: the GELU's gradient and the bias gradient of the product.
  add_op<M>(c,
            [](ContractPool& p) {
              return M{p.act({2, 3}), p.act({2, 4}), p.act({4, 3}), Transpose::none, Transpose::none, Tensor{},
                       Accumulate::overwrite, Tensor{}, Tensor{}, p.act({2, 3}), p.f32({3}), Tensor{}};
            },
            {wrong_shape("gelu_inp", &M::gelu_inp), wrong_shape("dbias", &M::dbias), wrong_dtype("dbias", &M::dbias),
             wrong_device("gelu_inp", &M::gelu_inp), alias("out", &M::out, &M::gelu_inp),
             alias("dbias", &M::dbias, &M::a),
             other<M>("gelu_inp", [](M& op) { op.gelu_inp.dtype = op.out.dtype == DType::f32 ? DType::bf16 : DType::f32; }),
             other<M>("gelu_inp", [](M& op) { op.mode = Accumulate::add; }),
             other<M>("dbias", [](M& op) { op.residual = op.gelu_inp; op.gelu_inp = Tensor{}; }),
             other<M>("gelu_inp", [](M& op) { op.gelu_out = op.gelu_inp; })});
  // A weight gradient with its bias gradient: out (3, 4) += a^T (3, 2) b (2, 4), dbias_a (3).
  add_op<M>(c,
            [](ContractPool& p) {
              return M{p.f32({3, 4}), p.act({2, 3}), p.act({2, 4}), Transpose::transpose, Transpose::none, Tensor{},
                       Accumulate::add, Tensor{}, Tensor{}, Tensor{}, Tensor{}, p.f32({3})};
            },
            {wrong_shape("dbias_a", &M::dbias_a), wrong_dtype("dbias_a", &M::dbias_a),
             wrong_device("dbias_a", &M::dbias_a), alias("dbias_a", &M::dbias_a, &M::a),
             alias("out", &M::out, &M::dbias_a),
             other<M>("dbias_a", [](M& op) { op.ta = Transpose::none; op.a = op.a.view({3, 2}); }),
             other<M>("dbias_a", [](M& op) { op.bias = op.b.rows(0, 1).view({4}); })});
  add_op<BB>(c, [](ContractPool& p) { return BB{p.f32({3}), p.act({2, 3})}; },
             {wrong_shape("dbias", &BB::dbias), wrong_dtype("dout", &BB::dout), wrong_device("dbias", &BB::dbias),
              alias("dbias", &BB::dbias, &BB::dout)});
  add_op<A>(c, [](ContractPool& p) { return A{p.act({2, 3, 4}), p.f32({2, 2, 3}), p.act({2, 3, 12}), 2}; },
            {wrong_shape("lse", &A::lse), wrong_dtype("qkv", &A::qkv), wrong_device("out", &A::out),
             alias("out", &A::out, &A::qkv), other<A>("qkv", [](A& op) { op.n_head = 3; })});
  add_op<AB>(c,
             [](ContractPool& p) {
               return AB{p.act({2, 3, 12}), p.act({2, 3, 4}), p.act({2, 3, 12}), p.act({2, 3, 4}), p.f32({2, 2, 3}), 2};
             },
             {wrong_shape("dout", &AB::dout), wrong_shape("dqkv", &AB::dqkv), wrong_dtype("lse", &AB::lse),
              wrong_device("qkv", &AB::qkv), alias("dqkv", &AB::dqkv, &AB::out)});
  add_op<G>(c, [](ContractPool& p) { return G{p.act({6}), p.act({6})}; },
            {wrong_shape("out", &G::out), wrong_dtype("inp", &G::inp), wrong_device("out", &G::out),
             alias("out", &G::out, &G::inp)});
  add_op<GB>(c, [](ContractPool& p) { return GB{p.act({6}), p.act({6}), p.act({6})}; },
             {wrong_shape("dout", &GB::dout), wrong_dtype("dinp", &GB::dinp), wrong_device("inp", &GB::inp),
              alias("dinp", &GB::dinp, &GB::inp), alias("dinp", &GB::dinp, &GB::dout)});
  add_op<AddOp>(c, [](ContractPool& p) { return AddOp{p.act({6}), p.act({6}), p.f32({6})}; },
                {wrong_shape("b", &AddOp::b), wrong_dtype("out", &AddOp::out), wrong_device("a", &AddOp::a),
                 alias("out", &AddOp::out, &AddOp::b)});
  add_op<ScaleOp>(c, [](ContractPool& p) { return ScaleOp{p.act({6}), 2.0f}; },
                  {wrong_dtype("x", &ScaleOp::x), wrong_device("x", &ScaleOp::x), missing("x", &ScaleOp::x)});
  add_op<FillOp>(c, [](ContractPool& p) { return FillOp{p.f32({6}), 2.0f}; },
                 {wrong_dtype("x", &FillOp::x), wrong_device("x", &FillOp::x), missing("x", &FillOp::x)});
  using IN = InitNormalOp;
  add_op<IN>(c, [](ContractPool& p) { return IN{p.f32({6}), NormalFill{}}; },
             {wrong_dtype("out", &IN::out), wrong_device("out", &IN::out), missing("out", &IN::out),
              other<IN>("first", [](IN& op) { op.fill.first = -1; }),
              other<IN>("first", [](IN& op) { op.fill.first = (int64_t(1) << 62) - 5; }),
              other<IN>("std", [](IN& op) { op.fill.std = std::numeric_limits<double>::infinity(); }),
              other<IN>("std", [](IN& op) { op.fill.std = 1e-30; })});
  add_op<CastOp>(c, [](ContractPool& p) { return CastOp{p.act({6}), p.f32({6})}; },
                 {wrong_shape("dst", &CastOp::dst), wrong_dtype("src", &CastOp::src), wrong_device("dst", &CastOp::dst),
                  alias("dst", &CastOp::dst, &CastOp::src)});
  add_op<SumSquaresOp>(c, [](ContractPool& p) { return SumSquaresOp{p.act({6})}; },
                       {wrong_dtype("x", &SumSquaresOp::x), wrong_device("x", &SumSquaresOp::x),
                        missing("x", &SumSquaresOp::x)});
  add_op<X>(c, [](ContractPool& p) { return X{p.f32({6}), p.act({6, 5}), 5}; },
            {wrong_shape("maxes", &X::maxes), wrong_dtype("logits", &X::logits), wrong_device("maxes", &X::maxes),
             alias("maxes", &X::maxes, &X::logits), other<X>("valid_cols", [](X& op) { op.valid_cols = 6; })});
  add_op<XS>(c,
             [](ContractPool& p) { return XS{p.f32({6}), p.f32({6}), p.act({6, 5}), p.f32({6}), p.i32({6}), 0, 5}; },
             {wrong_shape("targets", &XS::targets), wrong_dtype("targets", &XS::targets),
              wrong_device("maxes", &XS::maxes), alias("target_logit", &XS::target_logit, &XS::logits),
              other<XS>("valid_cols", [](XS& op) { op.valid_cols = -1; })});
  add_op<XL>(c, [](ContractPool& p) { return XL{p.f32({6}), p.f32({6}), p.f32({6}), p.f32({6})}; },
             {wrong_shape("sumexp", &XL::sumexp), wrong_dtype("losses", &XL::losses),
              wrong_device("target_logit", &XL::target_logit), alias("losses", &XL::losses, &XL::maxes)});
  add_op<XB>(c,
             [](ContractPool& p) {
               return XB{p.act({6, 5}), p.act({6, 5}), p.f32({6}), p.f32({6}), p.i32({6}), 0, 5, 0.5f};
             },
             {wrong_shape("dlogits", &XB::dlogits), wrong_dtype("sumexp", &XB::sumexp),
              wrong_device("targets", &XB::targets), alias("dlogits", &XB::dlogits, &XB::logits),
              alias("dlogits", &XB::dlogits, &XB::maxes)});
  using XF = XentFusedOp;
  auto fused = [](ContractPool& p) { return XF{p.f32({6}), p.act({6, 5}), p.i32({6}), 5, XentGrad::in_place, 0.5f}; };
  add_op<XF>(c, fused,
             {wrong_shape("losses", &XF::losses), wrong_shape("targets", &XF::targets), wrong_dtype("logits", &XF::logits),
              wrong_device("targets", &XF::targets), alias("losses", &XF::losses, &XF::logits),
              missing("targets", &XF::targets), other<XF>("valid_cols", [](XF& op) { op.valid_cols = 0; }),
              other<XF>("valid_cols", [](XF& op) { op.valid_cols = 6; })});
  add_op<XF>(c, [fused](ContractPool& p) { XF op = fused(p); op.grad = XentGrad::none; return op; }, {});
  add_op<AdamWOp>(c,
                  [](ContractPool& p) {
                    return AdamWOp{p.f32({6}), p.f32({6}), p.f32({6}), p.f32({6}), p.act({6}), AdamWStep{}};
                  },
                  {wrong_shape("v", &AdamWOp::v), wrong_dtype("param_copy", &AdamWOp::param_copy),
                   wrong_device("grad", &AdamWOp::grad), alias("param_copy", &AdamWOp::param_copy, &AdamWOp::grad),
                   other<AdamWOp>("step", [](AdamWOp& op) { op.h.step = 0; })});
  add_rmsnorm_rope_swiglu_contract_cases(c);
  add_generation_contract_cases(c);
  add_attention_block_contract_cases(c);
  add_multi_tensor_contract_cases(c);
  return c;
}

// Runs every case of the table on `backend`.
inline void check_contract(Backend& backend) {
  for (const ContractCase& c : contract_cases()) {
    ContractPool pool(backend);
    const std::string expected = std::string(c.op) + ": " + c.arg + " ";
    CAPTURE(backend.name());
    CAPTURE(c.op);
    CAPTURE(c.arg);
    CAPTURE(broken_name(c.broken));
    if (c.broken == Broken::nothing) {
      CHECK_NOTHROW(c.call(backend, pool));
      backend.synchronize();
      continue;
    }
    std::string message;
    try {
      c.call(backend, pool);
    } catch (const std::logic_error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.find(expected) != std::string::npos);
  }
}

}  // namespace trainer::testing
