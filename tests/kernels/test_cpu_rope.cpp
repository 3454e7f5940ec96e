// CPU rotary embedding: closed forms, norms kept and backward undoing forward, the fast path
// against the reference loop (grouped and multi-query k/v heads, in place), and the reference
// against finite differences (its backward is the transpose: the adjoint identity too).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_rope.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

// Base-10000 inverse frequencies, as Llama's: theta^(-2i / D).
std::vector<float> rope_inv_freq(int64_t D) {
  std::vector<float> f(size_t(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) f[size_t(i)] = float(std::pow(10000.0, -2.0 * double(i) / double(D)));
  return f;
}

}  // namespace

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
  std::vector<float> zero(size_t(g.D / 2), 0.0f), got(y.size()), freq = rope_inv_freq(g.D);
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
    auto freq = rope_inv_freq(s.D);
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

TEST_CASE("cpu rope: positions restarting per document match the reference and a run from each start") {
  auto be = make_cpu_backend();
  uint64_t seed = 900;
  for (const Heads& s : kHeadShapes)
    for (int direction : {1, -1}) {
      const int64_t W = s.width(), half = s.D / 2;
      RandomDocuments docs = random_documents(s.B, s.T, 3, ++seed);
      auto x = random_floats(s.rows() * W, ++seed, -2, 2), freq = random_floats(half, ++seed, 0, 1);
      std::vector<float> got(x.size()), want(x.size());
      const Tensor pos = view(docs.positions, {s.B, s.T});
      if (direction > 0)
        be->rope_forward(view(got, {s.B, s.T, W}), view(x, {s.B, s.T, W}), view(freq, {half}), int(s.H), int(s.Hkv),
                         0, pos);
      else
        be->rope_backward(view(got, {s.B, s.T, W}), view(x, {s.B, s.T, W}), view(freq, {half}), int(s.H),
                          int(s.Hkv), 0, pos);
      ref::rope<float>(want.data(), x.data(), freq.data(), s.B, s.T, s.H, s.Hkv, s.D, 0, direction,
                       docs.positions.data());
      const std::string what = s.name() + (direction > 0 ? " forward" : " backward");
      check_close(got, want, 1e-6, 1e-6, what);
      // Each row at position p turns as row p of an unpacked sequence does: row 0's.
      std::vector<float> plain(x.size());
      ref::rope<float>(plain.data(), x.data(), freq.data(), s.B, s.T, s.H, s.Hkv, s.D, 0, direction);
      for (int64_t r = 0; r < s.rows(); ++r) {
        if (docs.positions[size_t(r)] != r % s.T) continue;  // only rows whose position is unchanged
        for (int64_t c = 0; c < W; ++c) CHECK(got[size_t(r * W + c)] == plain[size_t(r * W + c)]);
      }
    }
  // Positions with an offset are refused: one or the other.
  auto be2 = make_cpu_backend();
  std::vector<float> x(2 * 12), freq(2);
  std::vector<int32_t> pos(2, 0);
  CHECK_THROWS_WITH_AS(be2->rope_forward(view(x, {1, 2, 12}), view(x, {1, 2, 12}), view(freq, {2}), 1, 1, 3,
                                         view(pos, {1, 2})),
                       doctest::Contains("rope_forward: pos_offset 3 must be 0 with positions"), std::logic_error);
}

TEST_CASE("cpu rope_backward: reference is the adjoint of forward and its finite-difference gradient") {
  const Heads s{2, 3, 2, 1, 4};
  const int64_t W = s.width(), n = s.rows() * W;
  auto x = to_double(random_floats(n, 680, -2, 2)), g = to_double(random_floats(n, 681));
  auto freq = rope_inv_freq(s.D);
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
