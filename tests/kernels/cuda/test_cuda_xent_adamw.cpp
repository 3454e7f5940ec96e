// CUDA cross-entropy passes and AdamW against the CPU backend, plus the rounding of AdamW's
// bf16 weight copy: round-to-nearest exactly, stochastic rounding to a neighbour, unbiased,
// and reproducible from (seed, offset).
#include <cmath>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("cross-entropy passes match the CPU") {
  struct Shape {
    int64_t N, Vl, valid, vocab_start, vocab_total;
  };
  const Shape shapes[] = {{3, 10, 10, 0, 10}, {17, 133, 130, 0, 130}, {5, 64, 50, 64, 128},
                          {4, 50304, 50257, 0, 50257}, {9, 40, 40, 0, 40}};
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (const Shape& s : shapes) {
      CAPTURE(rig.label);
      CAPTURE(s.N);
      CAPTURE(s.Vl);
      CAPTURE(s.valid);
      CAPTURE(s.vocab_start);
      Tensors cpu(*rig.cpu), gpu(*rig.gpu);
      const auto logits = rounded(random_floats(s.N * s.Vl, 121 + s.Vl, -4.0f, 4.0f), rig.act);
      const auto targets = random_tokens(s.N, int32_t(s.vocab_total), 122);
      const float dloss = 1.0f / float(s.N);

      Tensor cl = cpu.upload(logits, DType::f32, {s.N, s.Vl});
      Tensor ct = cpu.upload_i32(targets, {s.N});
      Tensor cmax = cpu.alloc(DType::f32, {s.N}), csum = cpu.alloc(DType::f32, {s.N});
      Tensor ctl = cpu.alloc(DType::f32, {s.N}), closs = cpu.alloc(DType::f32, {s.N});
      rig.cpu->xent_max(cmax, cl, s.valid);
      rig.cpu->xent_sumexp(csum, ctl, cl, cmax, ct, s.vocab_start, s.valid);
      rig.cpu->xent_loss(closs, cmax, csum, ctl);
      rig.cpu->xent_backward(cl, cl, cmax, csum, ct, s.vocab_start, s.valid, dloss);

      Tensor gl = gpu.upload(logits, rig.act, {s.N, s.Vl});
      Tensor gt = gpu.upload_i32(targets, {s.N});
      Tensor gmax = gpu.poisoned(DType::f32, {s.N}), gsum = gpu.poisoned(DType::f32, {s.N});
      Tensor gtl = gpu.poisoned(DType::f32, {s.N}), gloss = gpu.poisoned(DType::f32, {s.N});
      rig.gpu->xent_max(gmax, gl, s.valid);
      rig.gpu->xent_sumexp(gsum, gtl, gl, gmax, gt, s.vocab_start, s.valid);
      rig.gpu->xent_loss(gloss, gmax, gsum, gtl);
      check_equal(gpu.read(gmax), cpu.read(cmax), "xent_max");
      check_close(gpu.read(gsum), cpu.read(csum), kTolSum, "xent_sumexp sumexp");
      check_equal(gpu.read(gtl), cpu.read(ctl), "xent_sumexp target_logit");
      check_close(gpu.read(gloss), cpu.read(closs), kTolSum, "xent_loss");

      // In place (dlogits aliases logits), like the model does; padding must become 0.
      rig.gpu->xent_backward(gl, gl, gmax, gsum, gt, s.vocab_start, s.valid, dloss);
      check_close(gpu.read(gl), cpu.read(cl), rig.tol, "xent_backward in place");
      Tensor gl2 = gpu.upload(logits, rig.act, {s.N, s.Vl});
      Tensor gd = gpu.poisoned(rig.act, {s.N, s.Vl});
      rig.gpu->xent_backward(gd, gl2, gmax, gsum, gt, s.vocab_start, s.valid, dloss);
      check_close(gpu.read(gd), cpu.read(cl), rig.tol, "xent_backward");
    }
  }
}

AdamWStep test_step() {
  AdamWStep h;
  h.lr = 1e-2f;
  h.weight_decay = 0.1f;
  h.grad_scale = 0.5f;
  h.step = 3;
  h.seed = 42;
  h.offset = 1000;
  return h;
}

TEST_CASE("adamw matches the CPU and its compute copy rounds to nearest") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p, false);
    for (int64_t n : {int64_t(1), int64_t(13), int64_t(4099)})
      for (int64_t offset : {0, 1}) {
        CAPTURE(rig.label);
        CAPTURE(n);
        CAPTURE(offset);
        Tensors cpu(*rig.cpu), gpu(*rig.gpu);
        const auto param = random_floats(n, 131 + n);
        const auto grad = random_floats(n, 132 + n);
        const auto m = random_floats(n, 133 + n, -0.1f, 0.1f);
        const auto v = random_floats(n, 134 + n, 0.0f, 0.01f);
        Tensor cp = cpu.upload(param, DType::f32, {n}), cm = cpu.upload(m, DType::f32, {n});
        Tensor cv = cpu.upload(v, DType::f32, {n});
        rig.cpu->adamw(cp, cpu.upload(grad, DType::f32, {n}), cm, cv, Tensor{}, test_step());
        Tensor gp = gpu.upload(param, DType::f32, {n}, offset), gm = gpu.upload(m, DType::f32, {n}, offset);
        Tensor gv = gpu.upload(v, DType::f32, {n}, offset);
        Tensor gcopy = gpu.poisoned(rig.act, {n}, offset);
        rig.gpu->adamw(gp, gpu.upload(grad, DType::f32, {n}, offset), gm, gv, gcopy, test_step());
        const auto new_param = gpu.read(gp);
        check_close(new_param, cpu.read(cp), kTolF32, "adamw param");
        check_close(gpu.read(gm), cpu.read(cm), kTolF32, "adamw m");
        check_close(gpu.read(gv), cpu.read(cv), kTolF32, "adamw v");
        check_equal(gpu.read(gcopy), rounded(new_param, rig.act), "adamw copy");
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
  AdamWStep h = test_step();
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

}  // namespace
}  // namespace trainer::testing
