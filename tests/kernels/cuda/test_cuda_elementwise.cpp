// CUDA element-wise ops and reductions against the CPU backend (or exact host arithmetic):
// GELU, add, scale, fill, cast, sum_squares, bias_backward. Odd sizes and unaligned views
// exercise the scalar paths next to the 16-byte vector paths.
#include <cmath>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

const int64_t kSizes[] = {1, 7, 64, 1000, 4099};

TEST_CASE("gelu forward and backward match the CPU") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (int64_t n : kSizes)
      for (int64_t offset : {0, 1}) {
        CAPTURE(rig.label);
        CAPTURE(n);
        CAPTURE(offset);
        Tensors cpu(*rig.cpu), gpu(*rig.gpu);
        const auto x = rounded(random_floats(n, 11 + n, -4.0f, 4.0f), rig.act);
        const auto d = rounded(random_floats(n, 12 + n), rig.act);
        Tensor cx = cpu.upload(x, DType::f32, {n}), cd = cpu.upload(d, DType::f32, {n});
        Tensor cy = cpu.alloc(DType::f32, {n}), cdx = cpu.alloc(DType::f32, {n});
        rig.cpu->gelu_forward(cy, cx);
        rig.cpu->gelu_backward(cdx, cx, cd);
        Tensor gx = gpu.upload(x, rig.act, {n}, offset), gy = gpu.poisoned(rig.act, {n}, offset);
        Tensor gd = gpu.upload(d, rig.act, {n}, offset);
        rig.gpu->gelu_forward(gy, gx);
        rig.gpu->gelu_backward(gd, gx, gd);  // dinp aliases dout
        check_close(gpu.read(gy), cpu.read(cy), rig.tol, "gelu_forward");
        check_close(gpu.read(gd), cpu.read(cdx), rig.tol, "gelu_backward");
      }
  }
}

TEST_CASE("add scale fill and cast match exact host arithmetic") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (int64_t n : kSizes)
      for (int64_t offset : {0, 1}) {
        CAPTURE(rig.label);
        CAPTURE(n);
        CAPTURE(offset);
        Tensors gpu(*rig.gpu);
        const auto a = rounded(random_floats(n, 21 + n), rig.act);
        const auto b = rounded(random_floats(n, 22 + n), rig.act);
        const auto f = random_floats(n, 23 + n);
        std::vector<float> sum(n), scaled(n), fsum(n);
        for (int64_t i = 0; i < n; ++i) {
          sum[i] = rounded({a[i] + b[i]}, rig.act)[0];
          scaled[i] = rounded({a[i] * 0.37f}, rig.act)[0];
          fsum[i] = f[i] + b[i];
        }
        Tensor ga = gpu.upload(a, rig.act, {n}, offset), gb = gpu.upload(b, rig.act, {n});
        Tensor gout = gpu.poisoned(rig.act, {n});
        rig.gpu->add(gout, ga, gb);
        check_equal(gpu.read(gout), sum, "add act + act");
        rig.gpu->add(ga, ga, gb);  // out aliases a
        check_equal(gpu.read(ga), sum, "add in place");
        Tensor gf = gpu.upload(f, DType::f32, {n}, offset), gfout = gpu.poisoned(DType::f32, {n});
        rig.gpu->add(gfout, gf, gb);  // f32 + act -> f32
        check_equal(gpu.read(gfout), fsum, "add f32 + act");

        Tensor gs = gpu.upload(a, rig.act, {n}, offset);
        rig.gpu->scale(gs, 0.37f);
        check_equal(gpu.read(gs), scaled, "scale");
        rig.gpu->fill(gs, -2.5f);
        check_equal(gpu.read(gs), std::vector<float>(n, -2.5f), "fill");

        Tensor to_act = gpu.poisoned(rig.act, {n}, offset), to_f32 = gpu.poisoned(DType::f32, {n});
        rig.gpu->cast(to_act, gf);
        check_equal(gpu.read(to_act), rounded(f, rig.act), "cast f32 -> act");
        rig.gpu->cast(to_f32, to_act);
        check_equal(gpu.read(to_f32), rounded(f, rig.act), "cast act -> f32");
      }
  }
}

TEST_CASE("sum_squares is exact to double rounding and deterministic") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (int64_t n : {int64_t(1), int64_t(1000), int64_t(123457)})
      for (DType dtype : {DType::f32, rig.act})
        for (int64_t offset : {0, 1}) {
          CAPTURE(rig.label);
          CAPTURE(n);
          CAPTURE(offset);
          Tensors gpu(*rig.gpu);
          const auto x = rounded(random_floats(n, 31 + n, -3.0f, 3.0f), dtype);
          double want = 0;
          for (float v : x) want += double(v) * double(v);
          Tensor gx = gpu.upload(x, dtype, {n}, offset);
          const double got = rig.gpu->sum_squares(gx);
          CHECK(std::fabs(got - want) <= 1e-12 * want);
          CHECK(rig.gpu->sum_squares(gx) == got);
        }
  }
}

TEST_CASE("bias_backward matches the CPU and is deterministic") {
  struct Shape {
    int64_t M, N;
  };
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (Shape s : {Shape{1, 1}, Shape{5, 3}, Shape{300, 70}, Shape{1025, 33}, Shape{2048, 768}}) {
      CAPTURE(rig.label);
      CAPTURE(s.M);
      CAPTURE(s.N);
      Tensors cpu(*rig.cpu), gpu(*rig.gpu);
      const auto dout = rounded(random_floats(s.M * s.N, 41 + s.M), rig.act);
      const auto init = random_floats(s.N, 42);
      Tensor cdb = cpu.upload(init, DType::f32, {s.N});
      rig.cpu->bias_backward(cdb, cpu.upload(dout, DType::f32, {s.M, s.N}));
      Tensor gdout = gpu.upload(dout, rig.act, {s.M, s.N});
      Tensor gdb = gpu.upload(init, DType::f32, {s.N});
      rig.gpu->bias_backward(gdb, gdout);
      const auto first = gpu.read(gdb);
      check_close(first, cpu.read(cdb), kTolSum, "bias_backward");
      gpu.write(gdb, init);
      rig.gpu->bias_backward(gdb, gdout);
      check_equal(gpu.read(gdb), first, "bias_backward rerun");
    }
  }
}

}  // namespace
}  // namespace trainer::testing
