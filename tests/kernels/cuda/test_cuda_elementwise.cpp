// CUDA element-wise ops and reductions, the special cases: in-place forms (gelu_backward with
// dinp = dout, add with out = a) on aligned and unaligned views, and sum_squares (a scalar:
// exact to double rounding and deterministic; sum_squares_many its ordered sum over pieces,
// bit for bit). GELU, add, scale, fill, cast and bias_backward
// against the CPU are in the parity tables (parity_cases.h).
#include <cmath>
#include <cstring>
#include <iterator>

#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/multi_tensor_cases.h"

namespace trainer::testing {
namespace {

const int64_t kSizes[] = {1, 7, 64, 1000, 4099};

TEST_CASE("gelu_backward and add in place match the CPU") {
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
        Tensor cdx = cpu.alloc(DType::f32, {n});
        rig.cpu->gelu_backward(cdx, cx, cd);
        Tensor gd = gpu.upload(d, rig.act, {n}, offset);
        rig.gpu->gelu_backward(gd, gpu.upload(x, rig.act, {n}, offset), gd);  // dinp aliases dout
        check_close(gpu.read(gd), cpu.read(cdx), rig.tol, "gelu_backward in place");

        std::vector<float> sum(n);
        for (int64_t i = 0; i < n; ++i) sum[i] = rounded({x[i] + d[i]}, rig.act)[0];
        Tensor ga = gpu.upload(x, rig.act, {n}, offset);
        rig.gpu->add(ga, ga, gpu.upload(d, rig.act, {n}));  // out aliases a
        check_equal(gpu.read(ga), sum, "add in place");
      }
  }
}

// parallel.grad_reduce_dtype bf16 casts f32 gradients to bf16 and back on every backend, the
// CPU's included: the GPU's bits are the CPU's (round to nearest even), whatever act is.
TEST_CASE("cast to and from bf16 (the gradient reduction's wire) matches the CPU bit for bit") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (int64_t n : kSizes)
      for (int64_t offset : {0, 1}) {
        CAPTURE(rig.label);
        CAPTURE(n);
        CAPTURE(offset);
        auto x = random_floats(n, 31 + n, -3.0f, 3.0f);
        // Ties to even both ways, and an overflow to infinity.
        const float special[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 0x1.fffffep127f, -0.0f};
        for (size_t i = 0; i < std::size(special) && i < x.size(); ++i) x[i] = special[i];
        Tensors cpu(*rig.cpu), gpu(*rig.gpu);
        Tensor cw = cpu.alloc(DType::bf16, {n});
        rig.cpu->cast(cw, cpu.upload(x, DType::f32, {n}));
        Tensor gw = gpu.alloc(DType::bf16, {n}, offset);
        rig.gpu->cast(gw, gpu.upload(x, DType::f32, {n}, offset));
        check_equal(gpu.read(gw), cpu.read(cw), "f32 to bf16");
        Tensor back = gpu.poisoned(DType::f32, {n}, offset);
        rig.gpu->cast(back, gw);
        check_equal(gpu.read(back), cpu.read(cw), "bf16 to f32");
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

TEST_CASE("sum_squares_many is the ordered sum of each piece's sum_squares, exactly") {
  const std::vector<int64_t> sizes = multi_tensor_sizes(300);  // three launches' tables
  const int64_t n = total_of(sizes);
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (DType dtype : {DType::f32, rig.act})
      for (int64_t offset : {0, 1}) {
        CAPTURE(rig.label);
        CAPTURE(offset);
        Tensors gpu(*rig.gpu);
        const auto x = rounded(random_floats(size_t(n), 151, -3.0f, 3.0f), dtype);
        const std::vector<Tensor> xs = cut(gpu.upload(x, dtype, {n}, offset), sizes);
        double want = 0, exact = 0;
        for (const Tensor& t : xs) want += rig.gpu->sum_squares(t);
        for (float v : x) exact += double(v) * double(v);
        const double got = rig.gpu->sum_squares_many(xs);
        CHECK(std::memcmp(&got, &want, sizeof got) == 0);
        CHECK(std::fabs(got - exact) <= 1e-12 * exact);
        CHECK(rig.gpu->sum_squares_many(xs) == got);
      }
    CHECK(rig.gpu->sum_squares_many({}) == 0.0);
  }
}

}  // namespace
}  // namespace trainer::testing
