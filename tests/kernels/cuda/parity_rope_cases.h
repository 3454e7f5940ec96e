// The parity table of the rotary embedding, forward and backward (tests/kernels/cuda/parity.h),
// on the per-head ops' qkv shapes (kHeadRows: head sizes 2 to 128, grouped and multi-query k/v
// heads) at position offsets up to 8190, in place, and with positions restarting per document.
// Tolerance: one act rounding.
#pragma once

#include <iterator>
#include <string>
#include <vector>

#include "tests/kernels/cuda/parity.h"
#include "tests/kernels/cuda/parity_cases.h"

namespace trainer::testing {

// inv_freq uniform in [0, 1): angles up to pos_offset + T radians.
inline std::vector<ParityCase> rope_parity_cases() {
  const int64_t offsets[] = {0, 3, 1000, 0, 7, 0, 8190, 5};
  static_assert(std::size(offsets) == std::size(kHeadRows), "a position offset for every row");
  std::vector<ParityCase> cases;
  for (size_t i = 0; i < std::size(kHeadRows); ++i) {
    const HeadRow& r = kHeadRows[i];
    const int h = int(r.H), kv = int(r.Hkv);
    const int64_t pos = offsets[i];
    const std::string dims = r.dims() + " pos " + std::to_string(pos);
    for (int direction : {1, -1}) {
      const std::string name = direction > 0 ? "rope_forward" : "rope_backward";
      auto op = [h, kv, pos, direction](Backend& be, Tensor out, Tensor inp, Tensor inv_freq) {
        if (direction > 0)
          be.run(RopeForwardOp{out, inp, inv_freq, h, kv, pos});
        else
          be.run(RopeBackwardOp{out, inp, inv_freq, h, kv, pos});
      };
      cases.push_back(make_case(name + dims,
                                {output("out", Kind::act, r.qkv(), kTolAct), input("inp", Kind::act, r.qkv(), -2, 2),
                                 input("inv_freq", Kind::f32, {r.D / 2}, 0, 1)},
                                [op](Backend& be, const ParityArgs& t) { op(be, t["out"], t["inp"], t["inv_freq"]); }));
      cases.push_back(make_case(name + " in place" + dims,
                                {accumulated("x", Kind::act, r.qkv(), kTolAct), input("inv_freq", Kind::f32, {r.D / 2}, 0, 1)},
                                [op](Backend& be, const ParityArgs& t) { op(be, t["x"], t["x"], t["inv_freq"]); }, 1));
      // Positions restarting per document (offset 0).
      const std::vector<int32_t> positions = random_documents(r.B, r.T, 4, uint64_t(i + 17)).positions;
      cases.push_back(make_case(
          name + " documents" + r.dims(),
          {output("out", Kind::act, r.qkv(), kTolAct), input("inp", Kind::act, r.qkv(), -2, 2),
           input("inv_freq", Kind::f32, {r.D / 2}, 0, 1), fixed_ints("positions", {r.B, r.T}, positions)},
          [h, kv, direction](Backend& be, const ParityArgs& t) {
            if (direction > 0)
              be.run(RopeForwardOp{t["out"], t["inp"], t["inv_freq"], h, kv, 0, t["positions"]});
            else
              be.run(RopeBackwardOp{t["out"], t["inp"], t["inv_freq"], h, kv, 0, t["positions"]});
          }));
    }
  }
  return cases;
}

}  // namespace trainer::testing
