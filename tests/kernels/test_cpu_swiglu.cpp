// CPU SwiGLU: closed form, the fast path against the reference loops on odd shapes, and the
// reference against finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_swiglu.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu swiglu_forward: closed form") {
  auto be = make_cpu_backend();
  std::vector<float> inp = {0, 1, -2, 3, 30, -30, 2, 5};  // (2, 4): rows [gate (2) | up (2)]
  std::vector<float> out(4);
  be->swiglu_forward(view(out, {2, 2}), view(inp, {2, 4}));
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  CHECK(out[0] == 0.0f);                                       // silu(0) = 0
  CHECK(out[1] == doctest::Approx(silu(1) * 3).epsilon(1e-6));
  CHECK(out[2] == doctest::Approx(30.0 * 2).epsilon(1e-6));    // sigmoid(30) rounds to 1
  CHECK(out[3] == doctest::Approx(0.0).epsilon(1e-9));         // silu(-30) ~ -3e-12
}

TEST_CASE("cpu swiglu: fast path matches the reference on odd shapes") {
  auto be = make_cpu_backend();
  uint64_t seed = 700;
  for (Rows sh : kRowShapes) {
    const int64_t N = sh.N, F = sh.C;
    auto inp = random_floats(N * 2 * F, ++seed, -6, 6), dout = random_floats(N * F, ++seed);
    std::vector<float> out(N * F), rout(N * F), dinp(N * 2 * F), rdinp(N * 2 * F);
    be->swiglu_forward(view(out, {N, F}), view(inp, {N, 2 * F}));
    ref::swiglu_forward<float>(rout.data(), inp.data(), N, F);
    const std::string what = "N=" + std::to_string(N) + " F=" + std::to_string(F);
    check_close(out, rout, 1e-5, 1e-6, what + " out");
    be->swiglu_backward(view(dinp, {N, 2 * F}), view(inp, {N, 2 * F}), view(dout, {N, F}));
    ref::swiglu_backward<float>(rdinp.data(), inp.data(), dout.data(), N, F);
    check_close(dinp, rdinp, 1e-5, 1e-6, what + " dinp");
  }
}

TEST_CASE("cpu swiglu_backward: reference against finite differences") {
  const int64_t N = 3, F = 5;
  auto inp = to_double(random_floats(N * 2 * F, 710, -4, 4)), dout = to_double(random_floats(N * F, 711));
  auto loss = [&] {
    std::vector<double> out(N * F);
    ref::swiglu_forward<double>(out.data(), inp.data(), N, F);
    return dot(dout, out);
  };
  std::vector<double> dinp(N * 2 * F);
  ref::swiglu_backward<double>(dinp.data(), inp.data(), dout.data(), N, F);
  check_close(dinp, numeric_gradient(inp, loss), 1e-6, 1e-8, "dinp");
}
