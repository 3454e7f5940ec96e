// CUDA attention with grouped k/v heads, the special cases: on both paths (tensor cores for
// bf16 with D = 64, scalar for fp32) grouped heads read in place give what multi-head attention
// gives on the k/v heads repeated up to n_head: out, lse and dQ bit for bit (the same
// arithmetic per query head), dK and dV of a k/v head the sum of its group's heads' (summed in
// another order, so close, not equal); and an unaligned grouped qkv takes the scalar path and
// still matches the CPU. Grouped attention against the CPU on every path is in the parity
// tables (attention_parity_cases).
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

struct Shape {
  int64_t B, T, H, Hkv, D;
  int64_t grouped_width() const { return (H + 2 * Hkv) * D; }
  int64_t full_width() const { return 3 * H * D; }
};

// qkv with its k/v heads repeated: query head h gets k/v head h / (H / Hkv).
std::vector<float> repeat_kv(const std::vector<float>& qkv, const Shape& s) {
  const int64_t Wg = s.grouped_width(), Wf = s.full_width(), C = s.H * s.D, group = s.H / s.Hkv;
  std::vector<float> full(size_t(s.B * s.T * Wf));
  for (int64_t r = 0; r < s.B * s.T; ++r)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t d = 0; d < s.D; ++d) {
        full[r * Wf + h * s.D + d] = qkv[r * Wg + h * s.D + d];
        full[r * Wf + C + h * s.D + d] = qkv[r * Wg + C + (h / group) * s.D + d];
        full[r * Wf + 2 * C + h * s.D + d] = qkv[r * Wg + C + (s.Hkv + h / group) * s.D + d];
      }
  return full;
}

// The gradient of grouped qkv from that of the repeated one: dq as is, a k/v head's dk and dv
// summed over its group.
std::vector<float> sum_groups(const std::vector<float>& dfull, const Shape& s) {
  const int64_t Wg = s.grouped_width(), Wf = s.full_width(), C = s.H * s.D, group = s.H / s.Hkv;
  std::vector<float> g(size_t(s.B * s.T * Wg), 0.0f);
  for (int64_t r = 0; r < s.B * s.T; ++r)
    for (int64_t h = 0; h < s.H; ++h)
      for (int64_t d = 0; d < s.D; ++d) {
        g[r * Wg + h * s.D + d] = dfull[r * Wf + h * s.D + d];
        g[r * Wg + C + (h / group) * s.D + d] += dfull[r * Wf + C + h * s.D + d];
        g[r * Wg + C + (s.Hkv + h / group) * s.D + d] += dfull[r * Wf + 2 * C + h * s.D + d];
      }
  return g;
}

TEST_CASE("grouped attention equals multi-head attention on repeated k/v heads, on both CUDA paths") {
  for (Precision p : all_precisions())
    for (Shape s : {Shape{2, 70, 4, 2, 64}, Shape{1, 130, 4, 1, 64}}) {
      Rig rig = make_rig(p);
      CAPTURE(rig.label);
      CAPTURE(s.Hkv);
      const int64_t C = s.H * s.D, rows = s.B * s.T;
      Tensors gpu(*rig.gpu);
      const auto qkv = rounded(random_floats(rows * s.grouped_width(), 200 + s.Hkv, -1.5f, 1.5f), rig.act);
      const auto dout = rounded(random_floats(rows * C, 210 + s.Hkv), rig.act);
      Tensor gq = gpu.upload(qkv, rig.act, {s.B, s.T, s.grouped_width()});
      Tensor fq = gpu.upload(repeat_kv(qkv, s), rig.act, {s.B, s.T, s.full_width()});
      Tensor gout = gpu.poisoned(rig.act, {s.B, s.T, C}), fout = gpu.poisoned(rig.act, {s.B, s.T, C});
      Tensor glse = gpu.poisoned(DType::f32, {s.B, s.H, s.T}), flse = gpu.poisoned(DType::f32, {s.B, s.H, s.T});
      rig.gpu->attention_forward(gout, glse, gq, int(s.H), int(s.Hkv));
      rig.gpu->attention_forward(fout, flse, fq, int(s.H));
      check_equal(gpu.read(gout), gpu.read(fout), "grouped out");
      check_equal(gpu.read(glse), gpu.read(flse), "grouped lse");

      Tensor gd = gpu.upload(dout, rig.act, {s.B, s.T, C});
      Tensor gdqkv = gpu.poisoned(rig.act, {s.B, s.T, s.grouped_width()});
      Tensor fdqkv = gpu.poisoned(rig.act, {s.B, s.T, s.full_width()});
      rig.gpu->attention_backward(gdqkv, gd, gq, gout, glse, int(s.H), int(s.Hkv));
      rig.gpu->attention_backward(fdqkv, gd, fq, fout, flse, int(s.H));
      const std::vector<float> got = gpu.read(gdqkv), want = sum_groups(gpu.read(fdqkv), s);
      std::vector<float> got_q, want_q;  // the q columns of every row
      for (int64_t r = 0; r < rows; ++r) {
        const auto row = r * s.grouped_width();
        got_q.insert(got_q.end(), got.begin() + row, got.begin() + row + C);
        want_q.insert(want_q.end(), want.begin() + row, want.begin() + row + C);
      }
      check_equal(got_q, want_q, "grouped dq");
      // bf16: the grouped kernel rounds the group's f32 sum once, the repeated one each of up to
      // 4 heads before the sum, whose errors then add (and survive cancellation); a wrong head or
      // group would be off by the size of the data.
      check_close(got, want, p == Precision::bf16 ? 5e-2 : 1e-5, "grouped dqkv");
    }
}

TEST_CASE("grouped attention with an unaligned qkv takes the scalar path and still matches the CPU") {
  Rig rig = make_rig(Precision::bf16);
  const Shape s{1, 50, 4, 2, 64};
  const int64_t C = s.H * s.D, W = s.grouped_width();
  Tensors cpu(*rig.cpu), gpu(*rig.gpu);
  const auto qkv = rounded(random_floats(s.B * s.T * W, 220), rig.act);
  const auto dout = rounded(random_floats(s.B * s.T * C, 221), rig.act);
  Tensor cq = cpu.upload(qkv, DType::f32, {s.B, s.T, W});
  Tensor cout = cpu.alloc(DType::f32, {s.B, s.T, C}), clse = cpu.alloc(DType::f32, {s.B, s.H, s.T});
  Tensor cdqkv = cpu.alloc(DType::f32, {s.B, s.T, W});
  rig.cpu->attention_forward(cout, clse, cq, int(s.H), int(s.Hkv));
  rig.cpu->attention_backward(cdqkv, cpu.upload(dout, DType::f32, {s.B, s.T, C}), cq, cout, clse, int(s.H),
                              int(s.Hkv));
  Tensor gq = gpu.upload(qkv, rig.act, {s.B, s.T, W}, 1);
  Tensor gout = gpu.poisoned(rig.act, {s.B, s.T, C}, 1), glse = gpu.poisoned(DType::f32, {s.B, s.H, s.T});
  Tensor gdqkv = gpu.poisoned(rig.act, {s.B, s.T, W}, 1);
  rig.gpu->attention_forward(gout, glse, gq, int(s.H), int(s.Hkv));
  rig.gpu->attention_backward(gdqkv, gpu.upload(dout, rig.act, {s.B, s.T, C}, 1), gq, gout, glse, int(s.H),
                              int(s.Hkv));
  check_close(gpu.read(gout), cpu.read(cout), 3e-2, "unaligned grouped out");
  check_close(gpu.read(glse), cpu.read(clse), 1e-3, "unaligned grouped lse");
  check_close(gpu.read(gdqkv), cpu.read(cdqkv), 3e-2, "unaligned grouped dqkv");
}

}  // namespace
}  // namespace trainer::testing
