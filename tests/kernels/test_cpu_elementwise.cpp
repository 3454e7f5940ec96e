// CPU element-wise ops: GELU (closed form, fast vs reference, backward vs finite differences,
// in place), add/scale/fill/cast, sum_squares (closed form over many chunks), and the
// vectorisable exp behind GELU and the cross-entropy.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <iterator>

#include "kernels/base/bf16.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/reference_elementwise.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu exp_fast: close to std::exp, exact limits") {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = -87.0f + 175.0f * float(i) / 200000.0f;
    const double want = std::exp(double(x));
    worst = std::max(worst, std::fabs(cpu::exp_fast(x) - want) / want);
  }
  CHECK(worst < 3e-7);  // about 2.5 ulp
  CHECK(cpu::exp_fast(0.0f) == 1.0f);
  CHECK(cpu::exp_fast(-INFINITY) == 0.0f);
  CHECK(cpu::exp_fast(-1000.0f) == 0.0f);
  CHECK(std::isnan(cpu::exp_fast(NAN)));
  CHECK(std::isfinite(cpu::exp_fast(1000.0f)));
}

TEST_CASE("cpu gelu: closed form, fast matches reference, backward against finite differences") {
  auto be = make_cpu_backend();
  std::vector<float> x = {0.0f, 1.0f, -1.0f, 10.0f, -10.0f, 3.0f};
  std::vector<float> y(x.size());
  be->gelu_forward(view(y, {6}), view(x, {6}));
  const double k = std::sqrt(2.0 / M_PI);
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    const double want = 0.5 * xi * (1 + std::tanh(k * (xi + 0.044715 * xi * xi * xi)));
    CHECK(y[i] == doctest::Approx(want).epsilon(1e-6));
  }
  CHECK(y[0] == 0.0f);
  CHECK(y[3] == doctest::Approx(10.0));
  CHECK(std::fabs(y[4]) < 1e-6f);

  const int64_t n = 100003;  // not a multiple of the vector width or the thread count
  auto inp = random_floats(n, 5, -8, 8), dout = random_floats(n, 6);
  std::vector<float> out(n), rout(n), dinp(n), rdinp(n);
  be->gelu_forward(view(out, {n}), view(inp, {n}));
  ref::gelu_forward<float>(rout.data(), inp.data(), n);
  check_close(out, rout, 2e-6, 1e-6, "gelu_forward");
  be->gelu_backward(view(dinp, {n}), view(inp, {n}), view(dout, {n}));
  ref::gelu_backward<float>(rdinp.data(), inp.data(), dout.data(), n);
  check_close(dinp, rdinp, 2e-6, 1e-6, "gelu_backward");
  auto inplace = dout;  // dinp may alias dout
  be->gelu_backward(view(inplace, {n}), view(inp, {n}), view(inplace, {n}));
  CHECK(bitwise_equal(inplace, dinp));

  std::vector<double> xd = {-4.0, -1.3, -0.2, 0.0, 0.7, 2.5};
  for (size_t i = 0; i < xd.size(); ++i) {
    auto f = [&] { return ref::gelu<double>(xd[i]); };
    CHECK(ref::gelu_grad<double>(xd[i]) == doctest::Approx(central_difference(xd, i, f)).epsilon(1e-8));
  }
}

TEST_CASE("cpu add, scale, fill, cast") {
  auto be = make_cpu_backend();
  const int64_t n = 70001;
  auto a = random_floats(n, 1), b = random_floats(n, 2);
  std::vector<float> out(n);
  be->add(view(out, {n}), view(a, {n}), view(b, {n}));
  for (int64_t i = 0; i < n; i += 997) CHECK(out[i] == a[i] + b[i]);
  auto alias = a;
  be->add(view(alias, {n}), view(alias, {n}), view(b, {n}));
  CHECK(bitwise_equal(alias, out));
  be->scale(view(alias, {n}), -0.5f);
  for (int64_t i = 0; i < n; i += 997) CHECK(alias[i] == out[i] * -0.5f);
  be->fill(view(alias, {n}), 3.25f);
  CHECK(std::all_of(alias.begin(), alias.end(), [](float v) { return v == 3.25f; }));
  be->cast(view(alias, {n}), view(a, {n}));
  CHECK(bitwise_equal(alias, a));
  std::vector<int32_t> ints(4);
  std::vector<float> f(4);
  CHECK_THROWS_AS(be->cast(view(f, {4}), view(ints, {4})), std::logic_error);
  CHECK_THROWS_AS(be->add(view(out, {n}), view(a, {n}), view(f, {4})), std::logic_error);
}

// The CPU's one bf16 op (the gradient reduction's wire): round to nearest, ties to even, as
// CUDA's __float2bfloat16; NaN stays NaN; back to f32 exactly. Other ops still refuse bf16.
TEST_CASE("cpu cast to and from bf16: round to nearest even, exact back") {
  auto be = make_cpu_backend();
  auto from_bits = [](uint32_t u) {
    float x;
    std::memcpy(&x, &u, 4);
    return x;
  };
  struct Case {
    uint32_t f32;
    uint16_t bf16;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80},  // 1
      {0x3f808000u, 0x3f80},  // a tie, to the even 1
      {0x3f818000u, 0x3f82},  // a tie, to the even 0x3f82
      {0x3f808001u, 0x3f81},  // just above a tie
      {0x3f80ffffu, 0x3f81},
      {0x80000000u, 0x8000},  // -0
      {0x00008000u, 0x0000},  // a subnormal tie
      {0x7f7fffffu, 0x7f80},  // the largest float rounds to infinity
      {0xff800000u, 0xff80},  // -infinity
      {0xc0490fdbu, 0xc049},  // -pi
  };
  const int64_t n = int64_t(std::size(cases)) + 1;
  const size_t count = static_cast<size_t>(n);
  std::vector<float> src(count, NAN), back(count);
  for (size_t i = 0; i + 1 < size_t(n); ++i) src[i] = from_bits(cases[i].f32);
  std::vector<uint16_t> wire(count);
  Tensor w = make_tensor(wire.data(), DType::bf16, Device::cpu, {n});
  be->cast(w, view(src, {n}));
  for (size_t i = 0; i + 1 < size_t(n); ++i) {
    CAPTURE(cases[i].f32);
    CHECK(wire[i] == cases[i].bf16);
  }
  be->cast(view(back, {n}), w);
  for (size_t i = 0; i + 1 < size_t(n); ++i) CHECK(back[i] == from_bits(uint32_t(cases[i].bf16) << 16));
  CHECK(std::isnan(back[size_t(n) - 1]));
  // Many elements (the threaded loop) give the helper's bits.
  const int64_t m = 100003;
  auto x = random_floats(m, 7, -3.0f, 3.0f);
  std::vector<uint16_t> many(static_cast<size_t>(m));
  be->cast(make_tensor(many.data(), DType::bf16, Device::cpu, {m}), view(x, {m}));
  for (int64_t i = 0; i < m; ++i)
    if (many[size_t(i)] != bf16_from_f32(x[size_t(i)])) FAIL("element " << i);
  CHECK_THROWS_AS(be->add(w, w, w), std::logic_error);
}

TEST_CASE("cpu sum_squares: closed form across chunks, fast matches reference") {
  auto be = make_cpu_backend();
  const int64_t n = 200001;  // three full chunks and a tail
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = float((i % 1000) + 1);  // exact in float and double
  double want = 0;
  for (int64_t i = 0; i < n; ++i) want += double(x[i]) * double(x[i]);
  CHECK(be->sum_squares(view(x, {n})) == want);  // integers: every partial sum is exact
  auto r = random_floats(n, 9);
  CHECK(be->sum_squares(view(r, {n})) == doctest::Approx(ref::sum_squares<float>(r.data(), n)).epsilon(1e-12));
  CHECK(be->sum_squares(make_tensor(r.data(), DType::f32, Device::cpu, {0})) == 0.0);
}
