// The parity tables of RMSNorm and the per-head RMSNorm (qk-norm), forward and backward
// (tests/kernels/cuda/parity.h), on shapes that reach each kernel path: widths off the 8-element
// chunks and off the 256-thread block (vector and scalar loads), row blocks of the weight
// gradients' second pass, head sizes 2 to 128 with grouped and multi-query k/v heads, unaligned
// views, and the in-place forms (an accumulated argument passed as both input and output).
// Tolerances as in parity_cases.h: one act rounding for act outputs, kTolSums for the f32
// weight gradients.
#pragma once

#include <iterator>
#include <string>
#include <vector>

#include "tests/kernels/cuda/parity.h"
#include "tests/kernels/cuda/parity_cases.h"

namespace trainer::testing {

// ---- rmsnorm: (N, C), the last with an unaligned view ----
inline std::vector<ParityCase> rmsnorm_parity_cases() {
  // {2100, 40} and {16400, 40}: 66 and 513 blocks of 32 rows for the weight gradient's second
  // pass (cuda_reduce.cu): at 66 each thread row's one round of 16-deep loads is cut short, at
  // 513 a full round comes first. {3, 10000}: the backward stages one row per block in bf16,
  // none in f32 (cuda_norm_stage.cuh).
  // At C = 1 the input gradient is w dout rstd eps / (x^2 + eps), a cancellation in
  // 1 - x^2 rstd^2 that magnifies each backend's rounding by x^2 / eps: the backward's shortest
  // row is C = 3.
  const std::vector<std::vector<int64_t>> shapes = {{1, 1}, {1, 3}, {5, 7}, {3, 8}, {37, 768}, {16, 1600}, {70, 33},
                                                    {4, 2050}, {2100, 40}, {16400, 40}, {33, 64, 1}, {3, 10000}};
  std::vector<ParityCase> cases;
  for (const auto& s : shapes) {
    const int64_t N = s[0], C = s[1], offset = s.size() > 2 ? s[2] : 0;
    const std::string dims = dims_label("", {N, C}) + (offset ? " unaligned" : "");
    cases.push_back(make_case("rmsnorm_forward" + dims,
                              {output("out", Kind::act, {N, C}, kTolAct), output("rstd", Kind::f32, {N}, kTolStats),
                               input("inp", Kind::act, {N, C}, -2, 3), input("weight", Kind::act, {C}, 0.5f, 1.5f)},
                              [](Backend& be, const ParityArgs& t) {
                                be.run(RmsnormForwardOp{t["out"], t["rstd"], t["inp"], t["weight"], 1e-5f});
                              },
                              offset));
    if (C == 1) continue;
    for (Accumulate mode : {Accumulate::overwrite, Accumulate::add}) {
      ParityCase b = make_case(
          "rmsnorm_backward" + dims + (mode == Accumulate::add ? " add" : ""),
          {mode == Accumulate::add ? accumulated("dinp", Kind::act, {N, C}, kTolAct)
                                   : output("dinp", Kind::act, {N, C}, kTolAct),
           accumulated("dweight", Kind::f32, {C}, kTolSums), input("dout", Kind::act, {N, C}),
           input("inp", Kind::act, {N, C}, -2, 3), input("weight", Kind::act, {C}, 0.5f, 1.5f), input("rstd", Kind::f32, {N})},
          [mode](Backend& be, const ParityArgs& t) {
            be.run(RmsnormBackwardOp{t["dinp"], t["dweight"], t["dout"], t["inp"], t["weight"], t["rstd"], mode});
          },
          offset);
      // rstd of inp, as the forward pass saves it.
      b.prepare = [N, C](Backend& ref, const ParityArgs& t, Tensors& scratch) {
        ref.run(RmsnormForwardOp{scratch.alloc(DType::f32, {N, C}), t["rstd"], t["inp"], t["weight"], 1e-5f});
      };
      cases.push_back(b);
    }
    // In place: dinp is dout.
    ParityCase b = make_case(
        "rmsnorm_backward in place" + dims,
        {accumulated("dout", Kind::act, {N, C}, kTolAct), accumulated("dweight", Kind::f32, {C}, kTolSums),
         input("inp", Kind::act, {N, C}, -2, 3), input("weight", Kind::act, {C}, 0.5f, 1.5f), input("rstd", Kind::f32, {N})},
        [](Backend& be, const ParityArgs& t) {
          be.run(RmsnormBackwardOp{t["dout"], t["dweight"], t["dout"], t["inp"], t["weight"], t["rstd"],
                                   Accumulate::overwrite});
        },
        offset);
    b.prepare = [N, C](Backend& ref, const ParityArgs& t, Tensors& scratch) {
      ref.run(RmsnormForwardOp{scratch.alloc(DType::f32, {N, C}), t["rstd"], t["inp"], t["weight"], 1e-5f});
    };
    cases.push_back(b);
  }
  return cases;
}

inline std::vector<ParityCase> head_rmsnorm_parity_cases() {
  // And one of 513 blocks: a full round of the second pass's 16-deep loads, and a round cut short.
  std::vector<HeadRow> rows(std::begin(kHeadRows), std::end(kHeadRows));
  rows.push_back({1, 16400, 1, 1, 8});
  std::vector<ParityCase> cases;
  for (const HeadRow& r : rows) {
    const int h = int(r.H), kv = int(r.Hkv);
    const int64_t normed = r.B * r.T * (r.H + r.Hkv);
    for (int64_t offset : {0, 1}) {
      const std::string dims = r.dims() + (offset ? " unaligned" : "");
      cases.push_back(make_case(
          "head_rmsnorm_forward" + dims,
          {output("out", Kind::act, r.qkv(), kTolAct), output("rstd", Kind::f32, {normed}, kTolStats),
           input("inp", Kind::act, r.qkv(), -2, 3), input("q_weight", Kind::act, {r.D}, 0.5f, 1.5f),
           input("k_weight", Kind::act, {r.D}, 0.5f, 1.5f)},
          [h, kv](Backend& be, const ParityArgs& t) {
            be.run(HeadRmsnormForwardOp{t["out"], t["rstd"], t["inp"], t["q_weight"], t["k_weight"], h, kv, 1e-6f});
          },
          offset));
      // Out of place, then in place (dinp is dout).
      for (bool in_place : {false, true}) {
        ParityCase b = make_case(
            "head_rmsnorm_backward" + std::string(in_place ? " in place" : "") + dims,
            {in_place ? accumulated("dout", Kind::act, r.qkv(), kTolAct) : input("dout", Kind::act, r.qkv()),
             in_place ? absent("dinp") : output("dinp", Kind::act, r.qkv(), kTolAct),
             accumulated("dq_weight", Kind::f32, {r.D}, kTolSums), accumulated("dk_weight", Kind::f32, {r.D}, kTolSums),
             input("inp", Kind::act, r.qkv(), -2, 3), input("q_weight", Kind::act, {r.D}, 0.5f, 1.5f),
             input("k_weight", Kind::act, {r.D}, 0.5f, 1.5f), input("rstd", Kind::f32, {normed})},
            [h, kv, in_place](Backend& be, const ParityArgs& t) {
              be.run(HeadRmsnormBackwardOp{in_place ? t["dout"] : t["dinp"], t["dq_weight"], t["dk_weight"], t["dout"],
                                           t["inp"], t["q_weight"], t["k_weight"], t["rstd"], h, kv});
            },
            offset);
        b.prepare = [r, h, kv](Backend& ref, const ParityArgs& t, Tensors& scratch) {
          ref.run(HeadRmsnormForwardOp{scratch.alloc(DType::f32, r.qkv()), t["rstd"], t["inp"], t["q_weight"],
                                       t["k_weight"], h, kv, 1e-6f});
        };
        cases.push_back(b);
      }
    }
  }
  return cases;
}

}  // namespace trainer::testing
