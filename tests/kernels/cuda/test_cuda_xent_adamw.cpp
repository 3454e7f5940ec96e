// CUDA cross-entropy and AdamW, the special cases: xent_backward in place (dlogits = logits, as
// the model calls it) with the padding zeroed; the rounding of AdamW's bf16 weight copy: to
// nearest exactly, stochastic rounding to a neighbour, unbiased, and reproducible from (seed,
// offset); adamw_many's launches give adamw's bits piece by piece. The passes, AdamW and
// adamw_many against the CPU are in the parity tables (parity_cases.h).
#include <cmath>

#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/parity_cases.h"
#include "tests/kernels/multi_tensor_cases.h"

namespace trainer::testing {
namespace {

TEST_CASE("xent_backward in place matches the CPU and zeroes the padding") {
  struct Shape {
    int64_t N, Vl, valid, vocab_start, vocab_total;
  };
  const Shape shapes[] = {{17, 133, 130, 0, 130}, {5, 64, 50, 64, 128}, {4, 50304, 50257, 0, 50257}};
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (const Shape& s : shapes) {
      CAPTURE(rig.label);
      CAPTURE(s.N);
      CAPTURE(s.Vl);
      CAPTURE(s.vocab_start);
      Tensors cpu(*rig.cpu), gpu(*rig.gpu);
      const auto logits = rounded(random_floats(s.N * s.Vl, 121 + s.Vl, -4.0f, 4.0f), rig.act);
      const auto targets = random_tokens(s.N, int32_t(s.vocab_total), 122);
      const float dloss = 1.0f / float(s.N);
      Tensor cl = cpu.upload(logits, DType::f32, {s.N, s.Vl});
      Tensor ct = cpu.upload_i32(targets, {s.N});
      Tensor cmax = cpu.alloc(DType::f32, {s.N}), csum = cpu.alloc(DType::f32, {s.N});
      rig.cpu->xent_max(cmax, cl, s.valid);
      rig.cpu->xent_sumexp(csum, cpu.alloc(DType::f32, {s.N}), cl, cmax, ct, s.vocab_start, s.valid);
      // Like the model does: dlogits aliases logits, on both sides, from the same statistics.
      Tensor gl = gpu.upload(logits, rig.act, {s.N, s.Vl});
      Tensor gmax = gpu.upload(cpu.read(cmax), DType::f32, {s.N}), gsum = gpu.upload(cpu.read(csum), DType::f32, {s.N});
      rig.cpu->xent_backward(cl, cl, cmax, csum, ct, s.vocab_start, s.valid, dloss);
      rig.gpu->xent_backward(gl, gl, gmax, gsum, gpu.upload_i32(targets, {s.N}), s.vocab_start, s.valid, dloss);
      const auto got = gpu.read(gl);
      check_close(got, cpu.read(cl), rig.tol, "xent_backward in place");
      size_t padding_nonzero = 0;
      for (int64_t r = 0; r < s.N; ++r)
        for (int64_t c = s.valid; c < s.Vl; ++c) padding_nonzero += got[size_t(r * s.Vl + c)] != 0.0f;
      CHECK(padding_nonzero == 0);
    }
  }
}

TEST_CASE("adamw's compute copy is the new master weights rounded to nearest") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p, false);
    for (int64_t n : {int64_t(1), int64_t(13), int64_t(4099)})
      for (int64_t offset : {0, 1}) {
        CAPTURE(rig.label);
        CAPTURE(n);
        CAPTURE(offset);
        Tensors gpu(*rig.gpu);
        Tensor gp = gpu.upload(random_floats(n, 131 + n), DType::f32, {n}, offset);
        Tensor gm = gpu.upload(random_floats(n, 133 + n, -0.1f, 0.1f), DType::f32, {n}, offset);
        Tensor gv = gpu.upload(random_floats(n, 134 + n, 0.0f, 0.01f), DType::f32, {n}, offset);
        Tensor gcopy = gpu.poisoned(rig.act, {n}, offset);
        rig.gpu->adamw(gp, gpu.upload(random_floats(n, 132 + n), DType::f32, {n}, offset), gm, gv, gcopy, parity_adamw_step());
        check_equal(gpu.read(gcopy), rounded(gpu.read(gp), rig.act), "adamw copy");
      }
  }
}

TEST_CASE("adamw stochastic rounding picks a neighbour without bias and reproducibly") {
  Rig rig = make_rig(Precision::bf16, true);
  const int64_t n = 100000;
  // Between two bf16 values: 1 + ulp/3 with ulp = 2^-7.
  const float x = 1.0f + 0.0078125f / 3.0f;
  Tensors gpu(*rig.gpu);
  Tensor gp = gpu.upload(std::vector<float>(n, x), DType::f32, {n});
  Tensor zeros = gpu.upload(std::vector<float>(n, 0.0f), DType::f32, {n});
  Tensor gm = gpu.upload(std::vector<float>(n, 0.0f), DType::f32, {n});
  Tensor gv = gpu.upload(std::vector<float>(n, 0.0f), DType::f32, {n});
  Tensor gcopy = gpu.poisoned(DType::bf16, {n});
  AdamWStep h = parity_adamw_step();
  h.lr = 0.0f;  // the master weights stay at x; only the rounding of the copy is under test
  rig.gpu->adamw(gp, zeros, gm, gv, gcopy, h);
  const auto first = gpu.read(gcopy);
  const float lo = 1.0f, hi = 1.0f + 0.0078125f;
  double mean = 0;
  size_t outside = 0;
  for (float c : first) {
    outside += (c != lo && c != hi);
    mean += c;
  }
  mean /= double(n);
  CHECK(outside == 0);
  // Standard error of the mean: ulp * sqrt(p (1 - p) / n) ~ 1.2e-5.
  CHECK(std::fabs(mean - double(x)) < 1e-4);
  rig.gpu->adamw(gp, zeros, gm, gv, gcopy, h);
  check_equal(gpu.read(gcopy), first, "same seed and offset, same rounding");
  h.seed = 43;
  rig.gpu->adamw(gp, zeros, gm, gv, gcopy, h);
  const auto other = gpu.read(gcopy);
  size_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += other[i] != first[i];
  CHECK(differ > size_t(n / 10));
}

TEST_CASE("adamw_many gives adamw's bits piece by piece, stochastic rounding included") {
  const std::vector<int64_t> sizes = multi_tensor_sizes(100);
  const int64_t n = total_of(sizes);
  for (Precision p : all_precisions())
    for (bool stochastic : {false, true}) {
      if (p == Precision::fp32 && stochastic) continue;  // an f32 copy is not rounded
      Rig rig = make_rig(p, stochastic);
      CAPTURE(rig.label);
      CAPTURE(stochastic);
      Tensors gpu(*rig.gpu);
      const auto g = random_floats(size_t(n), 141), p0 = random_floats(size_t(n), 142);
      const auto m0 = random_floats(size_t(n), 143, -0.1f, 0.1f), v0 = random_floats(size_t(n), 144, 0.0f, 0.01f);
      Tensor gg = gpu.upload(g, DType::f32, {n});
      Tensor p1 = gpu.upload(p0, DType::f32, {n}), m1 = gpu.upload(m0, DType::f32, {n}),
             v1 = gpu.upload(v0, DType::f32, {n}), c1 = gpu.poisoned(rig.act, {n});
      Tensor p2 = gpu.upload(p0, DType::f32, {n}), m2 = gpu.upload(m0, DType::f32, {n}),
             v2 = gpu.upload(v0, DType::f32, {n}), c2 = gpu.poisoned(rig.act, {n});
      rig.gpu->adamw_many(adamw_many_pieces(p1, gg, m1, v1, c1, sizes, parity_adamw_step()));
      for (const AdamWOp& op : adamw_many_pieces(p2, gg, m2, v2, c2, sizes, parity_adamw_step())) rig.gpu->run(op);
      check_equal(gpu.read(p1), gpu.read(p2), "param");
      check_equal(gpu.read(m1), gpu.read(m2), "m");
      check_equal(gpu.read(v1), gpu.read(v2), "v");
      check_equal(gpu.read(c1), gpu.read(c2), "param_copy");
    }
}

}  // namespace
}  // namespace trainer::testing
