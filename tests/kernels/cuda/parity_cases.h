// The parity tables (tests/kernels/cuda/parity.h): every Backend op with tensor outputs, on
// shapes that reach each kernel path (vector and scalar loads, fused and separate matmul
// epilogues, K = 0, padded vocabularies, vocabulary
// slices, unaligned views). Tolerances are those the hand-written tests used: relative to the
// data's scale, 1e-5 for f32 outputs of short sums, 2e-2 for one bf16 rounding, 2e-5 for long
// f32 sums of identical inputs; exact where both sides do the same f32 arithmetic.
// sum_squares (a scalar) and the special cases (in place, stochastic rounding, unaligned
// matmul and attention views) stay hand-written in test_cuda_*.cpp. Attention's tables (the
// tensor-core and scalar kernels, documents, ring blocks) are in parity_attention_cases.h.
#pragma once

#include <string>
#include <vector>

#include "tests/kernels/cuda/parity.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/multi_tensor_cases.h"

namespace trainer::testing {

inline std::string dims_label(const char* op, const std::vector<int64_t>& dims) {
  std::string s = op;
  for (int64_t d : dims) s += " " + std::to_string(d);
  return s;
}

// ---- matmul ----
// dgelu, dbias: the backward form (gelu_inp, dbias); dbias_a: a weight gradient's bias gradient.
enum class Epilogue : uint8_t { none, bias, gelu, bias_gelu, residual, bias_residual, dgelu, dgelu_dbias, dbias, dbias_a };

struct MatmulRow {
  int64_t M, N, K;
  Transpose ta, tb;
  Epilogue epilogue;
  Accumulate mode;
  Kind out;  // act, or f32 (how weight gradients are accumulated)
};

inline std::vector<ParityCase> matmul_parity_cases() {
  constexpr Transpose kN = Transpose::none, kT = Transpose::transpose;
  constexpr Accumulate kOver = Accumulate::overwrite, kAdd = Accumulate::add;
  const MatmulRow rows[] = {
      {7, 5, 3, kN, kN, Epilogue::none, kOver, Kind::act},       {1, 1, 1, kN, kT, Epilogue::bias, kOver, Kind::act},
      {64, 96, 48, kN, kT, Epilogue::bias, kOver, Kind::act},    {64, 96, 48, kN, kT, Epilogue::bias_gelu, kOver, Kind::act},
      {64, 96, 48, kN, kT, Epilogue::gelu, kOver, Kind::act},    {33, 65, 17, kN, kT, Epilogue::bias_gelu, kOver, Kind::act},
      {48, 40, 64, kT, kN, Epilogue::none, kAdd, Kind::f32},     {37, 19, 53, kT, kN, Epilogue::none, kAdd, Kind::f32},
      {30, 20, 50, kN, kN, Epilogue::none, kAdd, Kind::act},     {30, 20, 50, kT, kT, Epilogue::bias, kOver, Kind::act},
      {256, 768, 128, kN, kN, Epilogue::none, kOver, Kind::act}, {128, 64, 256, kT, kN, Epilogue::none, kAdd, Kind::f32},
      {5, 8, 0, kN, kT, Epilogue::bias_gelu, kOver, Kind::act},  {4, 3, 0, kT, kN, Epilogue::bias, kAdd, Kind::f32},
      // The residual as cuBLASLt's C: with the bias epilogue, alone, at odd sizes, and K = 0.
      {64, 96, 48, kN, kT, Epilogue::bias_residual, kOver, Kind::act}, {256, 768, 128, kN, kT, Epilogue::residual, kOver, Kind::act},
      {33, 65, 17, kN, kT, Epilogue::bias_residual, kOver, Kind::act}, {5, 8, 0, kN, kT, Epilogue::bias_residual, kOver, Kind::act},
      {48, 40, 64, kN, kT, Epilogue::residual, kOver, Kind::f32},
      // The MLP's dX with the GELU's and the bias gradient: DGELU_BGRAD (bf16, N % 8 == 0), DGELU
      // alone, the bias gradient alone, odd sizes (our kernels) and K = 0.
      {64, 96, 48, kN, kN, Epilogue::dgelu_dbias, kOver, Kind::act}, {256, 768, 192, kN, kN, Epilogue::dgelu_dbias, kOver, Kind::act},
      {64, 96, 48, kN, kT, Epilogue::dgelu, kOver, Kind::act},       {64, 96, 48, kN, kN, Epilogue::dbias, kOver, Kind::act},
      {33, 65, 17, kN, kN, Epilogue::dgelu_dbias, kOver, Kind::act}, {5, 8, 0, kN, kN, Epilogue::dgelu_dbias, kOver, Kind::act},
      // A weight gradient with its bias gradient (BGRADB on bf16): into f32 as the model
      // accumulates them, a QKV-like shape, odd sizes, an act output, K = 0 and N = 0 (no
      // product, but a's column sums).
      {96, 64, 256, kT, kN, Epilogue::dbias_a, kAdd, Kind::f32},  {768, 256, 512, kT, kN, Epilogue::dbias_a, kAdd, Kind::f32},
      {65, 33, 17, kT, kN, Epilogue::dbias_a, kAdd, Kind::f32},   {48, 40, 64, kT, kT, Epilogue::dbias_a, kOver, Kind::act},
      {8, 5, 0, kT, kN, Epilogue::dbias_a, kAdd, Kind::f32},   {8, 0, 16, kT, kN, Epilogue::dbias_a, kAdd, Kind::f32},
  };
  std::vector<ParityCase> cases;
  for (const MatmulRow& r : rows) {
    const bool bias =
        r.epilogue == Epilogue::bias || r.epilogue == Epilogue::bias_gelu || r.epilogue == Epilogue::bias_residual;
    const bool gelu = r.epilogue == Epilogue::gelu || r.epilogue == Epilogue::bias_gelu;
    const bool residual = r.epilogue == Epilogue::residual || r.epilogue == Epilogue::bias_residual;
    const bool dgelu = r.epilogue == Epilogue::dgelu || r.epilogue == Epilogue::dgelu_dbias;
    const bool dbias = r.epilogue == Epilogue::dbias || r.epilogue == Epilogue::dgelu_dbias;
    const bool dbias_a = r.epilogue == Epilogue::dbias_a;
    // fp32: the summation order differs from OpenBLAS's over K terms. f32 outputs from bf16
    // inputs: exact products, f32 sums. bf16 outputs: one bf16 rounding.
    const Tol out_tol = r.out == Kind::f32 ? Tol{5 * kTolSum, 5 * kTolSum} : Tol{5 * kTolF32, kTolBf16};
    ParityCase c;
    c.label = dims_label("matmul", {r.M, r.N, r.K}) + (r.ta == kN ? " N" : " T") + (r.tb == kN ? "N" : "T") +
              (bias ? " bias" : "") + (gelu ? " gelu" : "") + (residual ? " residual" : "") +
              (dgelu ? " dgelu" : "") + (dbias ? " dbias" : "") + (dbias_a ? " dbias_a" : "") + (r.mode == kAdd ? " add" : "") +
              (r.out == Kind::f32 ? " f32" : "");
    c.args = {input("a", Kind::act, r.ta == kN ? std::vector<int64_t>{r.M, r.K} : std::vector<int64_t>{r.K, r.M}),
              input("b", Kind::act, r.tb == kN ? std::vector<int64_t>{r.K, r.N} : std::vector<int64_t>{r.N, r.K}),
              bias ? input("bias", Kind::act, {r.N}) : absent("bias"),
              r.mode == kAdd ? accumulated("out", r.out, {r.M, r.N}, out_tol) : output("out", r.out, {r.M, r.N}, out_tol),
              gelu ? output("gelu_out", r.out, {r.M, r.N}, Tol{5 * kTolF32, kTolBf16}) : absent("gelu_out"),
              residual ? input("residual", r.out, {r.M, r.N}) : absent("residual"),
              dgelu ? input("gelu_inp", r.out, {r.M, r.N}, -4, 4) : absent("gelu_inp"),
              // f32 sums on both sides; cuBLASLt's BGRAD sums the unrounded values, our
              // fallback the stored bf16 ones (one rounding each).
              dbias ? accumulated("dbias", Kind::f32, {r.N}, Tol{5 * kTolSum, kTolBf16}) : absent("dbias"),
              // Column sums of the same stored a on both sides: f32 sums in another order.
              dbias_a ? accumulated("dbias_a", Kind::f32, {r.M}, Tol{5 * kTolSum, 5 * kTolSum}) : absent("dbias_a")};
    c.run = [r](Backend& be, const ParityArgs& t) {
      be.run(MatmulOp{t["out"], t["a"], t["b"], r.ta, r.tb, t["bias"], r.mode, t["gelu_out"], t["residual"],
                      t["gelu_inp"], t["dbias"], t["dbias_a"]});
    };
    cases.push_back(c);
  }
  return cases;
}

// ---- encoder ----
enum class Positions : uint8_t { learned, none };

inline std::vector<ParityCase> encoder_parity_cases() {
  struct Row {
    int64_t B, T, C, Vl, vocab_start, vocab_total;
    Positions wpe;
  };
  const Row rows[] = {{2, 5, 8, 11, 0, 11, Positions::learned},   {3, 7, 13, 9, 4, 20, Positions::learned},
                      {2, 33, 40, 50, 0, 50, Positions::none},    {4, 64, 64, 7, 0, 7, Positions::learned},
                      {2, 600, 24, 30, 0, 30, Positions::learned},
                      // The backward's row list: a sparse batch over two channel slices; more
                      // touched rows (~2500) than the dwte kernel's blocks; buckets of ~700
                      // positions (its unrolled loads and their tail).
                      {1, 64, 300, 5000, 0, 5000, Positions::learned}, {2, 2000, 16, 4000, 0, 4000, Positions::none},
                      {3, 700, 40, 3, 0, 3, Positions::none}};
  std::vector<ParityCase> cases;
  for (const Row& r : rows) {
    const bool wpe = r.wpe == Positions::learned;
    const std::string dims = dims_label("", {r.B, r.T, r.C, r.Vl, r.vocab_start}) + (wpe ? "" : " no wpe");
    ParityCase f;
    f.label = "encoder_forward" + dims;
    f.args = {output("out", Kind::act, {r.B, r.T, r.C}, kTolAct), ints("tokens", {r.B, r.T}, r.vocab_total),
              input("wte", Kind::act, {r.Vl, r.C}), wpe ? input("wpe", Kind::act, {r.T, r.C}) : absent("wpe")};
    f.run = [r](Backend& be, const ParityArgs& t) {
      be.run(EncoderForwardOp{t["out"], t["tokens"], t["wte"], t["wpe"], r.vocab_start});
    };
    cases.push_back(f);
    ParityCase b;
    b.label = "encoder_backward" + dims;
    b.args = {accumulated("dwte", Kind::f32, {r.Vl, r.C}, kTolSums),
              wpe ? accumulated("dwpe", Kind::f32, {r.T, r.C}, kTolSums) : absent("dwpe"),
              input("dout", Kind::act, {r.B, r.T, r.C}), ints("tokens", {r.B, r.T}, r.vocab_total)};
    b.run = [r](Backend& be, const ParityArgs& t) {
      be.run(EncoderBackwardOp{t["dwte"], t["dwpe"], t["dout"], t["tokens"], r.vocab_start});
    };
    cases.push_back(b);
    if (!wpe) continue;
    // Positions restarting per document pick wpe's rows (dwpe then bucketed by position).
    const std::vector<int32_t> pos = random_documents(r.B, r.T, 6, uint64_t(r.T + r.C)).positions;
    ParityCase fp = f, bp = b;
    fp.label += " documents";
    fp.args.push_back(fixed_ints("positions", {r.B, r.T}, pos));
    fp.run = [r](Backend& be, const ParityArgs& t) {
      be.run(EncoderForwardOp{t["out"], t["tokens"], t["wte"], t["wpe"], r.vocab_start, t["positions"]});
    };
    cases.push_back(fp);
    bp.label += " documents";
    bp.args.push_back(fixed_ints("positions", {r.B, r.T}, pos));
    bp.run = [r](Backend& be, const ParityArgs& t) {
      be.run(EncoderBackwardOp{t["dwte"], t["dwpe"], t["dout"], t["tokens"], r.vocab_start, t["positions"]});
    };
    cases.push_back(bp);
  }
  return cases;
}

// ---- layernorm ----
inline std::vector<ParityCase> layernorm_parity_cases() {
  // The backward stages rows in shared memory (cuda_norm_stage.cuh): 12 rows of C = 768 in f32
  // and 24 in bf16, so {37, 768} has a short last block; C = 10000 stages one row in bf16 and
  // none in f32 (the global-memory path). {16400, 40}: 513 blocks of 32 rows, so each thread
  // row of the weight gradients' second pass (add_column_partials) adds a full round of 16
  // partials, and row 0 a 17th in a round cut short.
  // A row of C = 1 (or 2) normalizes to the bias whatever its values, so its input gradient is
  // 0 and both backends return their rounding residue: no relative tolerance holds there, and
  // the backward's shortest row is C = 3.
  const std::vector<std::vector<int64_t>> shapes = {{1, 1},     {1, 3},   {5, 7},     {3, 8},      {37, 768},
                                                    {16, 1600}, {70, 33}, {3, 10000}, {16400, 40}};
  std::vector<ParityCase> cases;
  for (const auto& nc : shapes) {
    const int64_t N = nc[0], C = nc[1];
    ParityCase f;
    f.label = dims_label("layernorm_forward", nc);
    f.args = {output("out", Kind::act, {N, C}, kTolAct), output("mean", Kind::f32, {N}, kTolStats),
              output("rstd", Kind::f32, {N}, kTolStats), input("inp", Kind::act, {N, C}, -2, 3),
              input("weight", Kind::act, {C}, 0.5f, 1.5f), input("bias", Kind::act, {C})};
    f.run = [](Backend& be, const ParityArgs& t) {
      be.run(LayernormForwardOp{t["out"], t["mean"], t["rstd"], t["inp"], t["weight"], t["bias"]});
    };
    cases.push_back(f);
    if (C < 3) continue;
    // The statistics of inp, as the forward pass saves them.
    const auto stats = [N, C](Backend& ref, const ParityArgs& t, Tensors& scratch) {
      ref.run(LayernormForwardOp{scratch.alloc(DType::f32, {N, C}), t["mean"], t["rstd"], t["inp"], t["weight"],
                                 scratch.upload(std::vector<float>(size_t(C), 0.0f), DType::f32, {C})});
    };
    for (Accumulate mode : {Accumulate::overwrite, Accumulate::add}) {
      ParityCase b;
      b.label = dims_label("layernorm_backward", nc) + (mode == Accumulate::add ? " add" : "");
      b.args = {mode == Accumulate::add ? accumulated("dinp", Kind::act, {N, C}, kTolAct)
                                        : output("dinp", Kind::act, {N, C}, kTolAct),
                accumulated("dweight", Kind::f32, {C}, kTolSums), accumulated("dbias", Kind::f32, {C}, kTolSums),
                input("dout", Kind::act, {N, C}), input("inp", Kind::act, {N, C}, -2, 3),
                input("weight", Kind::act, {C}, 0.5f, 1.5f), input("mean", Kind::f32, {N}),
                input("rstd", Kind::f32, {N})};
      b.prepare = stats;
      b.run = [mode](Backend& be, const ParityArgs& t) {
        be.run(LayernormBackwardOp{t["dinp"], t["dweight"], t["dbias"], t["dout"], t["inp"], t["weight"], t["mean"],
                                   t["rstd"], mode});
      };
      cases.push_back(b);
    }
    // In place: dinp is dout (a block reads its rows of dout before it writes any dinp).
    ParityCase b;
    b.label = dims_label("layernorm_backward in place", nc);
    b.args = {accumulated("dout", Kind::act, {N, C}, kTolAct), accumulated("dweight", Kind::f32, {C}, kTolSums),
              accumulated("dbias", Kind::f32, {C}, kTolSums), input("inp", Kind::act, {N, C}, -2, 3),
              input("weight", Kind::act, {C}, 0.5f, 1.5f), input("mean", Kind::f32, {N}), input("rstd", Kind::f32, {N})};
    b.prepare = stats;
    b.run = [](Backend& be, const ParityArgs& t) {
      be.run(LayernormBackwardOp{t["dout"], t["dweight"], t["dbias"], t["dout"], t["inp"], t["weight"], t["mean"],
                                 t["rstd"], Accumulate::overwrite});
    };
    cases.push_back(b);
  }
  return cases;
}

// ---- element-wise: odd sizes and unaligned views next to the 16-byte vector paths ----
inline std::vector<ParityCase> elementwise_parity_cases() {
  std::vector<ParityCase> cases;
  for (int64_t n : {1, 7, 64, 1000, 4099})
    for (int64_t offset : {0, 1}) {
      const std::string dims = dims_label("", {n}) + (offset ? " unaligned" : "");
      auto add_case = [&](const std::string& name, std::vector<ParityArg> args,
                          std::function<void(Backend&, const ParityArgs&)> run) {
        ParityCase c;
        c.label = name + dims;
        c.args = std::move(args);
        c.offset = offset;
        c.run = std::move(run);
        cases.push_back(std::move(c));
      };
      add_case("gelu_forward", {output("out", Kind::act, {n}, kTolAct), input("inp", Kind::act, {n}, -4, 4)},
               [](Backend& be, const ParityArgs& t) { be.run(GeluForwardOp{t["out"], t["inp"]}); });
      add_case("gelu_backward",
               {output("dinp", Kind::act, {n}, kTolAct), input("inp", Kind::act, {n}, -4, 4), input("dout", Kind::act, {n})},
               [](Backend& be, const ParityArgs& t) { be.run(GeluBackwardOp{t["dinp"], t["inp"], t["dout"]}); });
      // Both sides add, scale and convert in f32; the device rounds once to what it stores.
      for (Kind a : {Kind::act, Kind::f32})
        add_case(a == Kind::act ? "add act + act" : "add f32 + act",
                 {output("out", a, {n}, Tol{}, Compare::exact), input("a", a, {n}), input("b", Kind::act, {n})},
                 [](Backend& be, const ParityArgs& t) { be.run(AddOp{t["out"], t["a"], t["b"]}); });
      add_case("scale", {accumulated("x", Kind::act, {n}, Tol{}, Compare::exact)},
               [](Backend& be, const ParityArgs& t) { be.run(ScaleOp{t["x"], 0.37f}); });
      add_case("fill", {accumulated("x", Kind::act, {n}, Tol{}, Compare::exact)},
               [](Backend& be, const ParityArgs& t) { be.run(FillOp{t["x"], -2.5f}); });
      add_case("cast f32 -> act", {output("dst", Kind::act, {n}, Tol{}, Compare::exact), input("src", Kind::f32, {n})},
               [](Backend& be, const ParityArgs& t) { be.run(CastOp{t["dst"], t["src"]}); });
      add_case("cast act -> f32", {output("dst", Kind::f32, {n}, Tol{}, Compare::exact), input("src", Kind::act, {n})},
               [](Backend& be, const ParityArgs& t) { be.run(CastOp{t["dst"], t["src"]}); });
      // The normal draw rounds every step the same on both sides (kernels/base/box_muller.h):
      // exact, also far into a stream and across a zeroed tail.
      for (int64_t first : {int64_t(0), int64_t(5), (int64_t(1) << 40) + 3}) {
        NormalFill f;
        f.key = 0x5DEECE66Dull;
        f.stream = 1;
        f.first = first;
        f.std = 0.02;
        f.zero_from = first == 5 ? first + n / 2 : f.zero_from;
        add_case("init_normal first " + std::to_string(first), {output("out", Kind::f32, {n}, Tol{}, Compare::exact)},
                 [f](Backend& be, const ParityArgs& t) { be.run(InitNormalOp{t["out"], f}); });
      }
    }
  return cases;
}

// ---- reductions ----
inline std::vector<ParityCase> bias_backward_parity_cases() {
  const std::vector<std::vector<int64_t>> shapes = {{1, 1}, {5, 3}, {300, 70}, {1025, 33}, {2048, 768}};
  std::vector<ParityCase> cases;
  for (const std::vector<int64_t>& s : shapes) {
    ParityCase c;
    c.label = dims_label("bias_backward", s);
    c.args = {accumulated("dbias", Kind::f32, {s[1]}, kTolSums), input("dout", Kind::act, s)};
    c.run = [](Backend& be, const ParityArgs& t) { be.run(BiasBackwardOp{t["dbias"], t["dout"]}); };
    cases.push_back(c);
  }
  return cases;
}

// ---- cross-entropy ----
inline std::vector<ParityCase> xent_parity_cases() {
  struct Row {
    int64_t N, Vl, valid, vocab_start, vocab_total;
  };
  const Row rows[] = {{3, 10, 10, 0, 10}, {17, 133, 130, 0, 130}, {5, 64, 50, 64, 128}, {4, 50304, 50257, 0, 50257},
                      {9, 40, 40, 0, 40}};
  std::vector<ParityCase> cases;
  for (const Row& r : rows) {
    const std::string dims = dims_label("", {r.N, r.Vl, r.valid, r.vocab_start});
    const int64_t N = r.N;
    ParityCase mx;
    mx.label = "xent_max" + dims;
    mx.args = {output("maxes", Kind::f32, {N}, Tol{}, Compare::exact), input("logits", Kind::act, {N, r.Vl}, -4, 4)};
    mx.run = [r](Backend& be, const ParityArgs& t) { be.run(XentMaxOp{t["maxes"], t["logits"], r.valid}); };
    cases.push_back(mx);

    ParityCase se;
    se.label = "xent_sumexp" + dims;
    se.args = {output("sumexp", Kind::f32, {N}, kTolSums), output("target_logit", Kind::f32, {N}, Tol{}, Compare::exact),
               input("logits", Kind::act, {N, r.Vl}, -4, 4), input("maxes", Kind::f32, {N}),
               ints("targets", {N}, r.vocab_total)};
    se.prepare = [r](Backend& ref, const ParityArgs& t, Tensors&) { ref.run(XentMaxOp{t["maxes"], t["logits"], r.valid}); };
    se.run = [r](Backend& be, const ParityArgs& t) {
      be.run(XentSumexpOp{t["sumexp"], t["target_logit"], t["logits"], t["maxes"], t["targets"], r.vocab_start, r.valid});
    };
    cases.push_back(se);

    ParityCase lo;
    lo.label = "xent_loss" + dims;
    lo.args = {output("losses", Kind::f32, {N}, kTolSums), input("maxes", Kind::f32, {N}, -4, 4),
               input("sumexp", Kind::f32, {N}, 1, 100), input("target_logit", Kind::f32, {N}, -4, 4)};
    lo.run = [](Backend& be, const ParityArgs& t) {
      be.run(XentLossOp{t["losses"], t["maxes"], t["sumexp"], t["target_logit"]});
    };
    cases.push_back(lo);

    ParityCase bw;
    bw.label = "xent_backward" + dims;
    bw.args = {output("dlogits", Kind::act, {N, r.Vl}, kTolAct), input("logits", Kind::act, {N, r.Vl}, -4, 4),
               input("maxes", Kind::f32, {N}), input("sumexp", Kind::f32, {N}), ints("targets", {N}, r.vocab_total)};
    bw.prepare = [r](Backend& ref, const ParityArgs& t, Tensors& scratch) {
      ref.run(XentMaxOp{t["maxes"], t["logits"], r.valid});
      ref.run(XentSumexpOp{t["sumexp"], scratch.alloc(DType::f32, {r.N}), t["logits"], t["maxes"], t["targets"],
                           r.vocab_start, r.valid});
    };
    bw.run = [r](Backend& be, const ParityArgs& t) {
      be.run(XentBackwardOp{t["dlogits"], t["logits"], t["maxes"], t["sumexp"], t["targets"], r.vocab_start, r.valid,
                            1.0f / float(r.N)});
    };
    cases.push_back(bw);

    // The fused op over a whole vocabulary (tensor degree 1: slices starting at 0 only).
    if (r.vocab_start == 0)
      for (XentGrad grad : {XentGrad::none, XentGrad::in_place}) {
        ParityCase fu;
        fu.label = std::string("xent_fused") + dims + (grad == XentGrad::in_place ? " +grad" : "");
        fu.args = {output("losses", Kind::f32, {N}, kTolSums),
                   grad == XentGrad::in_place ? accumulated("logits", Kind::act, {N, r.Vl}, kTolAct, Compare::close, -4, 4)
                                              : input("logits", Kind::act, {N, r.Vl}, -4, 4),
                   ints("targets", {N}, r.vocab_total)};
        fu.run = [r, grad](Backend& be, const ParityArgs& t) {
          be.run(XentFusedOp{t["losses"], t["logits"], t["targets"], r.valid, grad, 1.0f / float(r.N)});
        };
        cases.push_back(fu);
      }
  }
  return cases;
}

// ---- optimizer ----
inline AdamWStep parity_adamw_step() {
  AdamWStep h;
  h.lr = 1e-2f;
  h.weight_decay = 0.1f;
  h.grad_scale = 0.5f;
  h.step = 3;
  h.seed = 42;
  h.offset = 1000;
  return h;
}

// The compute copy of the weights is one rounding of the new master weights (nearest; the
// rounding itself, and stochastic rounding, are tested in test_cuda_xent_adamw.cpp).
inline std::vector<ParityCase> adamw_parity_cases() {
  std::vector<ParityCase> cases;
  for (int64_t n : {1, 13, 4099})
    for (int64_t offset : {0, 1}) {
      ParityCase c;
      c.label = dims_label("adamw", {n}) + (offset ? " unaligned" : "");
      c.offset = offset;
      c.args = {accumulated("param", Kind::f32, {n}, kTolStats),
                input("grad", Kind::f32, {n}),
                accumulated("m", Kind::f32, {n}, kTolStats, Compare::close, -0.1f, 0.1f),
                accumulated("v", Kind::f32, {n}, kTolStats, Compare::close, 0.0f, 0.01f),
                output("param_copy", Kind::act, {n}, kTolAct)};
      c.run = [](Backend& be, const ParityArgs& t) {
        be.run(AdamWOp{t["param"], t["grad"], t["m"], t["v"], t["param_copy"], parity_adamw_step()});
      };
      cases.push_back(c);
    }
  // adamw_many over 100 pieces: more than one launch's table, pieces that end inside a tile,
  // empty ones, each with its own weight decay, seed and offset; with the copy and without.
  const std::vector<int64_t> sizes = multi_tensor_sizes(100);
  const int64_t n = total_of(sizes);
  for (bool copy : {true, false})
    for (int64_t offset : {0, 1}) {
      ParityCase c;
      c.label = "adamw_many 100 pieces" + std::string(copy ? "" : " no copy") + (offset ? " unaligned" : "");
      c.offset = offset;
      c.args = {accumulated("param", Kind::f32, {n}, kTolStats),
                input("grad", Kind::f32, {n}),
                accumulated("m", Kind::f32, {n}, kTolStats, Compare::close, -0.1f, 0.1f),
                accumulated("v", Kind::f32, {n}, kTolStats, Compare::close, 0.0f, 0.01f),
                copy ? output("param_copy", Kind::act, {n}, kTolAct) : absent("param_copy")};
      c.run = [sizes](Backend& be, const ParityArgs& t) {
        be.run(AdamWManyOp{adamw_many_pieces(t["param"], t["grad"], t["m"], t["v"], t["param_copy"], sizes,
                                             parity_adamw_step())});
      };
      cases.push_back(c);
    }
  return cases;
}

// ---- the per-head ops' qkv tensors (head RMSNorm, rope): (B, T, H, Hkv, D) ----
struct HeadRow {
  int64_t B, T, H, Hkv, D;
  int64_t width() const { return (H + 2 * Hkv) * D; }
  std::vector<int64_t> qkv() const { return {B, T, width()}; }
  std::string dims() const { return dims_label("", {B, T, H, Hkv, D}); }
};

// The last has 38 blocks of 32 rows for the weight gradients' second pass.
inline constexpr HeadRow kHeadRows[] = {{2, 5, 2, 1, 8},   {1, 37, 4, 2, 64}, {2, 17, 3, 3, 128}, {1, 3, 6, 1, 6},
                                        {3, 70, 4, 1, 16}, {1, 130, 2, 1, 2}, {2, 9, 6, 2, 36},   {4, 300, 2, 1, 64}};

}  // namespace trainer::testing
