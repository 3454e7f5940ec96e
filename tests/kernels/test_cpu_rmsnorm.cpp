// CPU Llama ops (RMSNorm, per-head RMSNorm, rotary embedding, SwiGLU): closed forms, the fast
// path against the reference loops on odd shapes (both dinp modes, accumulation into the
// weight gradients, grouped and multi-query k/v heads, in place), and the reference against
// finite differences (for rope, whose backward is the transpose: the adjoint identity too).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_ops.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

struct Rows {
  int64_t N, C;
};
const Rows kRowShapes[] = {{1, 1}, {1, 13}, {37, 200}, {5, 768}, {33, 1000}, {70, 33}};

struct Heads {
  int64_t B, T, H, Hkv, D;
  int64_t width() const { return (H + 2 * Hkv) * D; }
  int64_t rows() const { return B * T; }
  std::string name() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " H=" + std::to_string(H) +
           " Hkv=" + std::to_string(Hkv) + " D=" + std::to_string(D);
  }
};

const Heads kHeadShapes[] = {{2, 3, 2, 2, 4}, {1, 5, 4, 2, 8}, {2, 7, 6, 1, 6}, {1, 33, 4, 1, 64}, {3, 2, 3, 3, 2}};

// Base-10000 inverse frequencies, as Llama's: theta^(-2i / D).
std::vector<float> llama_inv_freq(int64_t D) {
  std::vector<float> f(size_t(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) f[size_t(i)] = float(std::pow(10000.0, -2.0 * double(i) / double(D)));
  return f;
}

}  // namespace

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

TEST_CASE("cpu rope: closed forms (angle 0 is the identity, D = 2 turns by pos * inv_freq, v untouched)") {
  const Heads s{1, 4, 2, 1, 2};
  const int64_t W = s.width();
  auto x = random_floats(s.rows() * W, 650, -2, 2);
  std::vector<float> inv_freq = {0.25f}, out(x.size());
  ref::rope<float>(out.data(), x.data(), inv_freq.data(), s.B, s.T, s.H, s.Hkv, s.D, 3, 1);
  for (int64_t t = 0; t < s.T; ++t) {
    const double angle = double(float(3 + t) * 0.25f), c = std::cos(angle), sn = std::sin(angle);
    for (int64_t h = 0; h < s.H + s.Hkv; ++h) {
      const float a = x[t * W + h * 2], b = x[t * W + h * 2 + 1];
      CHECK(out[t * W + h * 2] == doctest::Approx(a * c - b * sn).epsilon(1e-6));
      CHECK(out[t * W + h * 2 + 1] == doctest::Approx(b * c + a * sn).epsilon(1e-6));
    }
    for (int64_t e = (s.H + s.Hkv) * s.D; e < W; ++e) CHECK(out[t * W + e] == x[t * W + e]);
  }
  // Position 0 (row t = 0, no offset) and zero frequencies rotate by nothing.
  auto be = make_cpu_backend();
  const Heads g{2, 5, 4, 2, 8};
  auto y = random_floats(g.rows() * g.width(), 651, -2, 2);
  std::vector<float> zero(size_t(g.D / 2), 0.0f), got(y.size()), freq = llama_inv_freq(g.D);
  be->rope_forward(view(got, {g.B, g.T, g.width()}), view(y, {g.B, g.T, g.width()}), view(zero, {g.D / 2}), int(g.H),
                   int(g.Hkv), 17);
  CHECK(bitwise_equal(got, y));
  be->rope_forward(view(got, {g.B, g.T, g.width()}), view(y, {g.B, g.T, g.width()}), view(freq, {g.D / 2}), int(g.H),
                   int(g.Hkv), 0);
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t e = 0; e < g.width(); ++e) CHECK(got[b * g.T * g.width() + e] == y[b * g.T * g.width() + e]);
}

TEST_CASE("cpu rope: rotation keeps every pair's norm and backward undoes forward") {
  auto be = make_cpu_backend();
  uint64_t seed = 660;
  for (const Heads& s : kHeadShapes) {
    const int64_t W = s.width(), half = s.D / 2;
    auto x = random_floats(s.rows() * W, ++seed, -2, 2);
    auto freq = llama_inv_freq(s.D);
    std::vector<float> y(x.size()), back(x.size());
    const auto qkv = [&](std::vector<float>& v) { return view(v, {s.B, s.T, W}); };
    be->rope_forward(qkv(y), qkv(x), view(freq, {half}), int(s.H), int(s.Hkv), 1000);
    for (int64_t n = 0; n < s.rows(); ++n)
      for (int64_t h = 0; h < s.H + s.Hkv; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t e = n * W + h * s.D + i;
          const double before = std::hypot(double(x[e]), double(x[e + half]));
          CHECK(std::hypot(double(y[e]), double(y[e + half])) == doctest::Approx(before).epsilon(1e-6));
        }
    be->rope_backward(qkv(back), qkv(y), view(freq, {half}), int(s.H), int(s.Hkv), 1000);
    check_close(back, x, 1e-5, 1e-6, s.name() + " backward(forward(x))");
  }
}

TEST_CASE("cpu rope: fast path matches the reference, in place too") {
  auto be = make_cpu_backend();
  uint64_t seed = 670;
  for (const Heads& s : kHeadShapes)
    for (int direction : {1, -1}) {
      const int64_t W = s.width(), half = s.D / 2, pos = 7;
      auto x = random_floats(s.rows() * W, ++seed, -2, 2), freq = random_floats(half, ++seed, 0, 1);
      std::vector<float> got(x.size()), want(x.size());
      const auto qkv = [&](std::vector<float>& v) { return view(v, {s.B, s.T, W}); };
      auto run = [&](std::vector<float>& out, std::vector<float>& inp) {
        if (direction > 0)
          be->rope_forward(qkv(out), qkv(inp), view(freq, {half}), int(s.H), int(s.Hkv), pos);
        else
          be->rope_backward(qkv(out), qkv(inp), view(freq, {half}), int(s.H), int(s.Hkv), pos);
      };
      run(got, x);
      ref::rope<float>(want.data(), x.data(), freq.data(), s.B, s.T, s.H, s.Hkv, s.D, pos, direction);
      const std::string what = s.name() + (direction > 0 ? " forward" : " backward");
      check_close(got, want, 1e-6, 1e-6, what);
      auto in_place = x;
      run(in_place, in_place);
      check_close(in_place, got, 1e-6, 1e-7, what + " in place");
    }
}

TEST_CASE("cpu rope_backward: reference is the adjoint of forward and its finite-difference gradient") {
  const Heads s{2, 3, 2, 1, 4};
  const int64_t W = s.width(), n = s.rows() * W;
  auto x = to_double(random_floats(n, 680, -2, 2)), g = to_double(random_floats(n, 681));
  auto freq = llama_inv_freq(s.D);
  std::vector<double> fx(n), bg(n);
  ref::rope<double>(fx.data(), x.data(), freq.data(), s.B, s.T, s.H, s.Hkv, s.D, 5, 1);
  ref::rope<double>(bg.data(), g.data(), freq.data(), s.B, s.T, s.H, s.Hkv, s.D, 5, -1);
  CHECK(dot(g, fx) == doctest::Approx(dot(bg, x)).epsilon(1e-12));  // <g, R x> = <R^T g, x>
  auto loss = [&] {
    std::vector<double> out(n);
    ref::rope<double>(out.data(), x.data(), freq.data(), s.B, s.T, s.H, s.Hkv, s.D, 5, 1);
    return dot(g, out);
  };
  check_close(bg, numeric_gradient(x, loss), 1e-6, 1e-8, "dinp");
}

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
