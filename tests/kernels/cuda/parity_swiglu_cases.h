// The parity table of SwiGLU, forward and backward (tests/kernels/cuda/parity.h), on widths off
// the 8-element chunks and an unaligned view. Tolerance: one act rounding.
#pragma once

#include <string>
#include <vector>

#include "tests/kernels/cuda/parity.h"
#include "tests/kernels/cuda/parity_cases.h"

namespace trainer::testing {

// ---- swiglu: (N, F), inp (N, 2F) ----
inline std::vector<ParityCase> swiglu_parity_cases() {
  const std::vector<std::vector<int64_t>> shapes = {{1, 1}, {5, 7}, {3, 8}, {37, 768}, {16, 1000}, {70, 33}, {37, 768, 1}};
  std::vector<ParityCase> cases;
  for (const auto& s : shapes) {
    const int64_t N = s[0], F = s[1], offset = s.size() > 2 ? s[2] : 0;
    const std::string dims = dims_label("", {N, F}) + (offset ? " unaligned" : "");
    cases.push_back(make_case("swiglu_forward" + dims,
                              {output("out", Kind::act, {N, F}, kTolAct), input("inp", Kind::act, {N, 2 * F}, -6, 6)},
                              [](Backend& be, const ParityArgs& t) { be.run(SwigluForwardOp{t["out"], t["inp"]}); },
                              offset));
    cases.push_back(make_case("swiglu_backward" + dims,
                              {output("dinp", Kind::act, {N, 2 * F}, kTolAct), input("inp", Kind::act, {N, 2 * F}, -6, 6),
                               input("dout", Kind::act, {N, F})},
                              [](Backend& be, const ParityArgs& t) {
                                be.run(SwigluBackwardOp{t["dinp"], t["inp"], t["dout"]});
                              },
                              offset));
  }
  return cases;
}

}  // namespace trainer::testing
