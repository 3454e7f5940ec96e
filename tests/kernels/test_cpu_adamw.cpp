// CPU AdamW: the first step in closed form (bias correction makes it lr * sign-like), weight
// decay and grad_scale, several steps of the fast path against the reference, param_copy.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_adamw.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu adamw: first step in closed form") {
  // Step 1 from m = v = 0: m_hat = g, v_hat = g^2, so p1 = p0 (1 - lr wd) - lr g / (|g| + eps).
  auto be = make_cpu_backend();
  const int64_t n = 5;
  std::vector<float> p = {1.0f, -2.0f, 0.5f, 0.0f, 3.0f};
  std::vector<float> g = {0.2f, -0.4f, 0.0f, 1e-3f, -7.0f};
  std::vector<float> m(n, 0.0f), v(n, 0.0f), copy(n, -1.0f);
  AdamWStep h;
  h.lr = 0.01f;
  h.beta1 = 0.9f;
  h.beta2 = 0.95f;
  h.eps = 1e-8f;
  h.weight_decay = 0.1f;
  h.grad_scale = 0.5f;
  h.step = 1;
  const auto p0 = p;
  be->adamw(view(p, {n}), view(g, {n}), view(m, {n}), view(v, {n}), view(copy, {n}), h);
  for (int64_t i = 0; i < n; ++i) {
    const double gs = 0.5 * g[i];
    const double want = p0[i] * (1 - 0.01 * 0.1) - 0.01 * gs / (std::fabs(gs) + 1e-8);
    CHECK(p[i] == doctest::Approx(want).epsilon(1e-6));
    CHECK(m[i] == doctest::Approx(0.1 * gs).epsilon(1e-6));
    CHECK(v[i] == doctest::Approx(0.05 * gs * gs).epsilon(1e-6));
    CHECK(copy[i] == p[i]);
  }
}

TEST_CASE("cpu adamw: fast path matches the reference over several steps") {
  auto be = make_cpu_backend();
  const int64_t n = 100003;
  auto p = random_floats(n, 1), rp = p;
  std::vector<float> m(n, 0.0f), v(n, 0.0f), rm = m, rv = v;
  AdamWStep h;
  h.lr = 6e-4f;
  h.weight_decay = 0.1f;
  for (int64_t step = 1; step <= 4; ++step) {
    auto g = random_floats(n, 100 + uint64_t(step), -0.01f, 0.01f);
    h.step = step;
    h.grad_scale = step == 3 ? 0.25f : 1.0f;
    be->adamw(view(p, {n}), view(g, {n}), view(m, {n}), view(v, {n}), Tensor{}, h);
    ref::adamw<float>(rp.data(), g.data(), rm.data(), rv.data(), nullptr, n, h);
  }
  check_close(p, rp, 1e-6, 1e-7, "param");
  check_close(m, rm, 1e-5, 1e-10, "m");
  check_close(v, rv, 1e-5, 1e-12, "v");
  AdamWStep bad = h;
  bad.step = 0;
  CHECK_THROWS_AS(be->adamw(view(p, {n}), view(p, {n}), view(m, {n}), view(v, {n}), Tensor{}, bad),
                  std::logic_error);
}
