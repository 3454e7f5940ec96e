// CUDA rope, the special cases: rope of one token at pos_offset p (a KV-cache step) is, bit for
// bit, row p of rope over the whole sequence, and rope_backward undoes rope_forward to the act
// dtype's rounding. Rope against the CPU on odd shapes, unaligned views and in place is in the
// parity tables (parity_rope_cases.h).
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("rope of one token at pos_offset p is row p of rope over the sequence") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(rig.label);
    const int64_t T = 40, H = 4, Hkv = 2, D = 64, W = (H + 2 * Hkv) * D;
    Tensors gpu(*rig.gpu);
    const auto x = rounded(random_floats(T * W, 301, -2, 2), rig.act);
    std::vector<float> freq(D / 2);
    for (int64_t i = 0; i < D / 2; ++i) freq[size_t(i)] = float(std::pow(500000.0, -2.0 * double(i) / double(D)));
    Tensor inv_freq = gpu.upload(freq, DType::f32, {D / 2});
    Tensor all = gpu.poisoned(rig.act, {1, T, W});
    rig.gpu->rope_forward(all, gpu.upload(x, rig.act, {1, T, W}), inv_freq, int(H), int(Hkv), 0);
    const std::vector<float> whole = gpu.read(all);
    for (int64_t pos : {int64_t(0), int64_t(1), int64_t(39)}) {
      CAPTURE(pos);
      const std::vector<float> row(x.begin() + pos * W, x.begin() + (pos + 1) * W);
      Tensor one = gpu.upload(row, rig.act, {1, 1, W});
      rig.gpu->rope_forward(one, one, inv_freq, int(H), int(Hkv), pos);  // in place
      check_equal(gpu.read(one), std::vector<float>(whole.begin() + pos * W, whole.begin() + (pos + 1) * W),
                  "one token at its position");
    }
    Tensor back = gpu.poisoned(rig.act, {1, T, W});
    rig.gpu->rope_backward(back, all, inv_freq, int(H), int(Hkv), 0);
    // fp32: cosf and sinf are within an ulp or two, so the two rotations undo each other to ~1e-7.
    check_close(gpu.read(back), x, p == Precision::bf16 ? 2e-2 : 1e-5, "backward(forward(x))");
  }
}

}  // namespace
}  // namespace trainer::testing
