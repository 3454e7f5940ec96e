// CPU RMSNorm and per-head RMSNorm (qk-norm): closed forms, the fast path against the
// reference loops on odd shapes (both dinp modes, accumulation into the weight gradients,
// grouped and multi-query k/v heads, in place), and the reference against finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_rmsnorm.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu rmsnorm_forward: closed form") {
  auto be = make_cpu_backend();
  std::vector<float> x = {1, 2, 3, 4, 0, 0, 0, 0};  // (2,4); second row zero
  std::vector<float> w = {1, 2, 1, 0.5f};
  std::vector<float> out(8), rstd(2);
  be->rmsnorm_forward(view(out, {2, 4}), view(rstd, {2}), view(x, {2, 4}), view(w, {4}), 1e-5f);
  const double r = 1.0 / std::sqrt(7.5 + 1e-5);  // mean of 1, 4, 9, 16
  CHECK(rstd[0] == doctest::Approx(r).epsilon(1e-6));
  for (int c = 0; c < 4; ++c) CHECK(out[c] == doctest::Approx(x[c] * r * w[c]).epsilon(1e-6));
  CHECK(rstd[1] == doctest::Approx(1.0 / std::sqrt(1e-5)).epsilon(1e-5));
  for (int c = 0; c < 4; ++c) CHECK(out[4 + c] == 0.0f);
}

TEST_CASE("cpu rmsnorm: fast path matches the reference on odd shapes") {
  auto be = make_cpu_backend();
  uint64_t seed = 500;
  for (Rows sh : kRowShapes) {
    const int64_t N = sh.N, C = sh.C;
    auto x = random_floats(N * C, ++seed, -2, 3), w = random_floats(C, ++seed, 0.5f, 1.5f);
    auto dout = random_floats(N * C, ++seed);
    std::vector<float> out(N * C), rstd(N), rout(N * C), rrstd(N);
    be->rmsnorm_forward(view(out, {N, C}), view(rstd, {N}), view(x, {N, C}), view(w, {C}), 1e-5f);
    ref::rmsnorm_forward<float>(rout.data(), rrstd.data(), x.data(), w.data(), N, C, 1e-5f);
    const std::string what = "N=" + std::to_string(N) + " C=" + std::to_string(C);
    check_close(out, rout, 1e-5, 1e-5, what + " out");
    check_close(rstd, rrstd, 1e-5, 1e-5, what + " rstd");
    for (Accumulate mode : {Accumulate::overwrite, Accumulate::add}) {
      auto dinp = random_floats(N * C, ++seed), dw = random_floats(C, ++seed);
      auto rdinp = dinp, rdw = dw;
      be->rmsnorm_backward(view(dinp, {N, C}), view(dw, {C}), view(dout, {N, C}), view(x, {N, C}), view(w, {C}),
                           view(rstd, {N}), mode);
      ref::rmsnorm_backward<float>(rdinp.data(), rdw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C, mode);
      check_close(dinp, rdinp, 1e-4, 1e-5, what + " dinp");
      check_close(dw, rdw, 1e-5, 1e-5, what + " dweight");
    }
    auto in_place = dout;  // dinp aliases dout
    std::vector<float> dw(C, 0.0f), rdinp(N * C), rdw(C, 0.0f);
    be->rmsnorm_backward(view(in_place, {N, C}), view(dw, {C}), view(in_place, {N, C}), view(x, {N, C}), view(w, {C}),
                         view(rstd, {N}), Accumulate::overwrite);
    ref::rmsnorm_backward<float>(rdinp.data(), rdw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C,
                                 Accumulate::overwrite);
    check_close(in_place, rdinp, 1e-4, 1e-5, what + " dinp in place");
    check_close(dw, rdw, 1e-5, 1e-5, what + " dweight in place");
  }
}

TEST_CASE("cpu rmsnorm_backward: reference against finite differences") {
  const int64_t N = 3, C = 7;
  auto x = to_double(random_floats(N * C, 601, -2, 2)), w = to_double(random_floats(C, 602, 0.5f, 1.5f));
  auto dout = to_double(random_floats(N * C, 603));
  auto loss = [&] {
    std::vector<double> out(N * C), rstd(N);
    ref::rmsnorm_forward<double>(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
    return dot(dout, out);
  };
  std::vector<double> out(N * C), rstd(N), dinp(N * C), dw(C, 0.0);
  ref::rmsnorm_forward<double>(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
  ref::rmsnorm_backward<double>(dinp.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C,
                                Accumulate::overwrite);
  check_close(dinp, numeric_gradient(x, loss), 1e-6, 1e-8, "dinp");
  check_close(dw, numeric_gradient(w, loss), 1e-6, 1e-8, "dweight");
}

TEST_CASE("cpu head_rmsnorm: each q and k head is an rmsnorm of its D features, v is copied") {
  const Heads s{2, 3, 4, 2, 5};
  const int64_t W = s.width(), normed = s.H + s.Hkv;
  auto x = random_floats(s.rows() * W, 610, -2, 2), qw = random_floats(s.D, 611), kw = random_floats(s.D, 612);
  std::vector<float> out(x.size()), rstd(s.rows() * normed);
  ref::head_rmsnorm_forward<float>(out.data(), rstd.data(), x.data(), qw.data(), kw.data(), s.rows(), s.H, s.Hkv, s.D,
                                   1e-6f);
  for (int64_t n = 0; n < s.rows(); ++n)
    for (int64_t h = 0; h < s.H + 2 * s.Hkv; ++h) {
      const float* xh = x.data() + n * W + h * s.D;
      std::vector<float> head(xh, xh + s.D), got(out.begin() + n * W + h * s.D, out.begin() + n * W + (h + 1) * s.D);
      if (h >= normed) {
        CHECK(bitwise_equal(got, head));
        continue;
      }
      std::vector<float> want(s.D), r(1);
      ref::rmsnorm_forward<float>(want.data(), r.data(), head.data(), (h < s.H ? qw : kw).data(), 1, s.D, 1e-6f);
      CHECK(bitwise_equal(got, want));
      CHECK(rstd[n * normed + h] == r[0]);
    }
}

TEST_CASE("cpu head_rmsnorm: fast path matches the reference, with grouped k/v heads and in place") {
  auto be = make_cpu_backend();
  uint64_t seed = 620;
  for (const Heads& s : kHeadShapes) {
    const int64_t W = s.width(), rows = s.rows(), normed = rows * (s.H + s.Hkv);
    auto x = random_floats(rows * W, ++seed, -2, 3), qw = random_floats(s.D, ++seed, 0.5f, 1.5f);
    auto kw = random_floats(s.D, ++seed, 0.5f, 1.5f), dout = random_floats(rows * W, ++seed);
    std::vector<float> out(x.size()), rstd(normed), rout(x.size()), rrstd(normed);
    const auto qkv = [&](std::vector<float>& v) { return view(v, {s.B, s.T, W}); };
    be->head_rmsnorm_forward(qkv(out), view(rstd, {normed}), qkv(x), view(qw, {s.D}), view(kw, {s.D}), int(s.H),
                             int(s.Hkv), 1e-6f);
    ref::head_rmsnorm_forward<float>(rout.data(), rrstd.data(), x.data(), qw.data(), kw.data(), rows, s.H, s.Hkv, s.D,
                                     1e-6f);
    check_close(out, rout, 1e-5, 1e-5, s.name() + " out");
    check_close(rstd, rrstd, 1e-5, 1e-5, s.name() + " rstd");
    auto dq = random_floats(s.D, ++seed), dk = random_floats(s.D, ++seed);
    auto rdq = dq, rdk = dk;
    std::vector<float> dinp(x.size()), rdinp(x.size());
    be->head_rmsnorm_backward(qkv(dinp), view(dq, {s.D}), view(dk, {s.D}), qkv(dout), qkv(x), view(qw, {s.D}),
                              view(kw, {s.D}), view(rstd, {normed}), int(s.H), int(s.Hkv));
    ref::head_rmsnorm_backward<float>(rdinp.data(), rdq.data(), rdk.data(), dout.data(), x.data(), qw.data(), kw.data(),
                                      rstd.data(), rows, s.H, s.Hkv, s.D);
    check_close(dinp, rdinp, 1e-4, 1e-5, s.name() + " dinp");
    check_close(dq, rdq, 1e-5, 1e-5, s.name() + " dq_weight");
    check_close(dk, rdk, 1e-5, 1e-5, s.name() + " dk_weight");
    auto in_place = dout;
    std::vector<float> dq2(s.D, 0.0f), dk2(s.D, 0.0f);
    be->head_rmsnorm_backward(qkv(in_place), view(dq2, {s.D}), view(dk2, {s.D}), qkv(in_place), qkv(x), view(qw, {s.D}),
                              view(kw, {s.D}), view(rstd, {normed}), int(s.H), int(s.Hkv));
    check_close(in_place, rdinp, 1e-4, 1e-5, s.name() + " dinp in place");
  }
}

TEST_CASE("cpu head_rmsnorm_backward: reference against finite differences") {
  const Heads s{2, 2, 4, 2, 3};
  const int64_t W = s.width(), rows = s.rows(), normed = rows * (s.H + s.Hkv);
  auto x = to_double(random_floats(rows * W, 640, -2, 2)), qw = to_double(random_floats(s.D, 641, 0.5f, 1.5f));
  auto kw = to_double(random_floats(s.D, 642, 0.5f, 1.5f)), dout = to_double(random_floats(rows * W, 643));
  auto loss = [&] {
    std::vector<double> out(x.size()), rstd(normed);
    ref::head_rmsnorm_forward<double>(out.data(), rstd.data(), x.data(), qw.data(), kw.data(), rows, s.H, s.Hkv, s.D,
                                      1e-6);
    return dot(dout, out);
  };
  std::vector<double> out(x.size()), rstd(normed), dinp(x.size()), dq(s.D, 0.0), dk(s.D, 0.0);
  ref::head_rmsnorm_forward<double>(out.data(), rstd.data(), x.data(), qw.data(), kw.data(), rows, s.H, s.Hkv, s.D, 1e-6);
  ref::head_rmsnorm_backward<double>(dinp.data(), dq.data(), dk.data(), dout.data(), x.data(), qw.data(), kw.data(),
                                     rstd.data(), rows, s.H, s.Hkv, s.D);
  check_close(dinp, numeric_gradient(x, loss), 1e-6, 1e-8, "dinp");
  check_close(dq, numeric_gradient(qw, loss), 1e-6, 1e-8, "dq_weight");
  check_close(dk, numeric_gradient(kw, loss), 1e-6, 1e-8, "dk_weight");
}
