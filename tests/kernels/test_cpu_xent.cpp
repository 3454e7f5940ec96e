// CPU softmax cross-entropy: closed form (uniform logits), padding ignored, fast path against
// the reference (vocabulary not a multiple of 128, targets outside the slice), a two-slice
// vocabulary-parallel composition equal to one pass, in-place backward, and the reference
// backward against finite differences.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_xent.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

struct XentOut {
  std::vector<float> maxes, sumexp, target_logit, losses, dlogits;
};

XentOut run_fast(Backend& be, std::vector<float>& logits, std::vector<int32_t>& targets,
                 int64_t N, int64_t Vl, int64_t vocab_start, int64_t valid, float dloss) {
  XentOut r{std::vector<float>(N), std::vector<float>(N), std::vector<float>(N),
            std::vector<float>(N), std::vector<float>(N * Vl)};
  be.xent_max(view(r.maxes, {N}), view(logits, {N, Vl}), valid);
  be.xent_sumexp(view(r.sumexp, {N}), view(r.target_logit, {N}), view(logits, {N, Vl}),
                 view(r.maxes, {N}), view(targets, {N}), vocab_start, valid);
  be.xent_loss(view(r.losses, {N}), view(r.maxes, {N}), view(r.sumexp, {N}),
               view(r.target_logit, {N}));
  be.xent_backward(view(r.dlogits, {N, Vl}), view(logits, {N, Vl}), view(r.maxes, {N}),
                   view(r.sumexp, {N}), view(targets, {N}), vocab_start, valid, dloss);
  return r;
}

}  // namespace

TEST_CASE("cpu xent: closed form with uniform logits and ignored padding") {
  auto be = make_cpu_backend();
  const int64_t N = 3, Vl = 12, valid = 10;
  std::vector<float> logits(N * Vl, 2.5f);
  for (int64_t n = 0; n < N; ++n) logits[n * Vl + 10] = logits[n * Vl + 11] = 1e4f;  // padding
  std::vector<int32_t> targets = {0, 4, 9};
  auto r = run_fast(*be, logits, targets, N, Vl, 0, valid, 0.5f);
  for (int64_t n = 0; n < N; ++n) {
    CHECK(r.maxes[n] == 2.5f);
    CHECK(r.sumexp[n] == doctest::Approx(10.0));
    CHECK(r.target_logit[n] == 2.5f);
    CHECK(r.losses[n] == doctest::Approx(std::log(10.0)).epsilon(1e-6));
    for (int64_t v = 0; v < Vl; ++v) {
      const double want = v >= valid ? 0.0 : 0.5 * (0.1 - (v == targets[n] ? 1.0 : 0.0));
      CHECK(r.dlogits[n * Vl + v] == doctest::Approx(want).epsilon(1e-6));
    }
  }
}

TEST_CASE("cpu xent: fast path matches the reference, targets inside and outside the slice") {
  auto be = make_cpu_backend();
  const int64_t N = 37, Vl = 1024, valid = 1001, vocab_start = 500;
  auto logits = random_floats(N * Vl, 3, -6, 6);
  auto targets = random_ints(N, int32_t(vocab_start - 50), int32_t(vocab_start + valid + 50), 4);
  targets[0] = int32_t(vocab_start);
  targets[1] = int32_t(vocab_start + valid - 1);
  targets[2] = int32_t(vocab_start + valid);  // padding column: not a target in this slice
  auto r = run_fast(*be, logits, targets, N, Vl, vocab_start, valid, 1.0f / 37);
  std::vector<float> maxes(N), sumexp(N), tl(N), losses(N), dl(N * Vl);
  ref::xent_max<float>(maxes.data(), logits.data(), N, Vl, valid);
  ref::xent_sumexp<float>(sumexp.data(), tl.data(), logits.data(), maxes.data(), targets.data(),
                          N, Vl, vocab_start, valid);
  ref::xent_loss<float>(losses.data(), maxes.data(), sumexp.data(), tl.data(), N);
  ref::xent_backward<float>(dl.data(), logits.data(), maxes.data(), sumexp.data(), targets.data(),
                            N, Vl, vocab_start, valid, 1.0f / 37);
  CHECK(bitwise_equal(r.maxes, maxes));
  check_close(r.sumexp, sumexp, 1e-5, 0, "sumexp");
  CHECK(bitwise_equal(r.target_logit, tl));
  CHECK(r.target_logit[2] == 0.0f);
  check_close(r.losses, losses, 1e-5, 1e-5, "losses");
  check_close(r.dlogits, dl, 1e-5, 1e-9, "dlogits");

  auto inplace = logits;  // dlogits may alias logits
  be->xent_backward(view(inplace, {N, Vl}), view(inplace, {N, Vl}), view(r.maxes, {N}),
                    view(r.sumexp, {N}), view(targets, {N}), vocab_start, valid, 1.0f / 37);
  CHECK(bitwise_equal(inplace, r.dlogits));
}

TEST_CASE("cpu xent: two vocabulary slices reduced in between equal one pass") {
  auto be = make_cpu_backend();
  const int64_t N = 9, V = 301, split = 150;  // slice 0: [0,150), slice 1: [150,301) padded
  const int64_t Vl = 152;
  auto full = random_floats(N * V, 7, -5, 5);
  auto targets = random_ints(N, 0, int32_t(V), 8);
  auto one = run_fast(*be, full, targets, N, V, 0, V, 1.0f);
  std::vector<float> s0(N * Vl, 0.0f), s1(N * Vl, 0.0f);
  for (int64_t n = 0; n < N; ++n) {
    std::copy(&full[n * V], &full[n * V + split], &s0[n * Vl]);
    std::copy(&full[n * V + split], &full[n * V + V], &s1[n * Vl]);
  }
  const int64_t valid0 = split, valid1 = V - split;
  std::vector<float> m0(N), m1(N), maxes(N), e0(N), e1(N), t0(N), t1(N);
  be->xent_max(view(m0, {N}), view(s0, {N, Vl}), valid0);
  be->xent_max(view(m1, {N}), view(s1, {N, Vl}), valid1);
  for (int64_t n = 0; n < N; ++n) maxes[n] = std::max(m0[n], m1[n]);  // the all-reduce (max)
  be->xent_sumexp(view(e0, {N}), view(t0, {N}), view(s0, {N, Vl}), view(maxes, {N}),
                  view(targets, {N}), 0, valid0);
  be->xent_sumexp(view(e1, {N}), view(t1, {N}), view(s1, {N, Vl}), view(maxes, {N}),
                  view(targets, {N}), split, valid1);
  std::vector<float> sumexp(N), tl(N), losses(N);
  for (int64_t n = 0; n < N; ++n) {  // the all-reduces (sum)
    sumexp[n] = e0[n] + e1[n];
    tl[n] = t0[n] + t1[n];
  }
  be->xent_loss(view(losses, {N}), view(maxes, {N}), view(sumexp, {N}), view(tl, {N}));
  check_close(losses, one.losses, 1e-5, 1e-6, "sliced losses");
  std::vector<float> d0(N * Vl), d1(N * Vl);
  be->xent_backward(view(d0, {N, Vl}), view(s0, {N, Vl}), view(maxes, {N}), view(sumexp, {N}),
                    view(targets, {N}), 0, valid0, 1.0f);
  be->xent_backward(view(d1, {N, Vl}), view(s1, {N, Vl}), view(maxes, {N}), view(sumexp, {N}),
                    view(targets, {N}), split, valid1, 1.0f);
  for (int64_t n = 0; n < N; ++n) {
    std::vector<float> got(d0.begin() + n * Vl, d0.begin() + n * Vl + valid0);
    got.insert(got.end(), d1.begin() + n * Vl, d1.begin() + n * Vl + valid1);
    std::vector<float> want(one.dlogits.begin() + n * V, one.dlogits.begin() + (n + 1) * V);
    check_close(got, want, 1e-5, 1e-8, "sliced dlogits");
    CHECK(d0[n * Vl + Vl - 1] == 0.0f);
    CHECK(d1[n * Vl + Vl - 1] == 0.0f);
  }
}

TEST_CASE("cpu xent_backward: reference against finite differences") {
  const int64_t N = 4, Vl = 9, valid = 7, vocab_start = 3;
  auto logits = to_double(random_floats(N * Vl, 21, -3, 3));
  std::vector<int32_t> targets = {3, 9, 5, 20};  // the last one lies outside this slice
  const double dloss = 0.25;
  auto loss = [&] {
    std::vector<double> m(N), s(N), t(N), l(N);
    ref::xent_max<double>(m.data(), logits.data(), N, Vl, valid);
    ref::xent_sumexp<double>(s.data(), t.data(), logits.data(), m.data(), targets.data(), N, Vl,
                             vocab_start, valid);
    ref::xent_loss<double>(l.data(), m.data(), s.data(), t.data(), N);
    double total = 0;
    for (double x : l) total += dloss * x;
    return total;
  };
  std::vector<double> m(N), s(N), t(N), d(N * Vl);
  ref::xent_max<double>(m.data(), logits.data(), N, Vl, valid);
  ref::xent_sumexp<double>(s.data(), t.data(), logits.data(), m.data(), targets.data(), N, Vl,
                           vocab_start, valid);
  ref::xent_backward<double>(d.data(), logits.data(), m.data(), s.data(), targets.data(), N, Vl,
                             vocab_start, valid, dloss);
  check_close(d, numeric_gradient(logits, loss), 1e-6, 1e-9, "dlogits");
}

TEST_CASE("cpu xent_fused: the unfused passes' results, bit for bit, the logits kept without the gradient") {
  auto be = make_cpu_backend();
  // A small shape (vector tails) and one above the parallel threshold (N * V > 2^15).
  struct Shape {
    int64_t N, V, valid;
  };
  for (const Shape shape : {Shape{7, 40, 37}, Shape{40, 1000, 997}}) {
    const int64_t N = shape.N, V = shape.V, valid = shape.valid;
    CAPTURE(V);
    const size_t rows = size_t(N);
    std::vector<float> logits = random_floats(rows * size_t(V), 91, -4, 4);
    std::vector<int32_t> targets(rows);
    for (int64_t i = 0; i < N; ++i) targets[size_t(i)] = int32_t((i * 11) % valid);
    std::vector<float> maxes(rows), sumexp(rows), tl(rows), want_loss(rows), want_grad = logits;
    be->xent_max(view(maxes, {N}), view(logits, {N, V}), valid);
    be->xent_sumexp(view(sumexp, {N}), view(tl, {N}), view(logits, {N, V}), view(maxes, {N}), view(targets, {N}), 0,
                    valid);
    be->xent_loss(view(want_loss, {N}), view(maxes, {N}), view(sumexp, {N}), view(tl, {N}));
    be->xent_backward(view(want_grad, {N, V}), view(logits, {N, V}), view(maxes, {N}), view(sumexp, {N}),
                      view(targets, {N}), 0, valid, 0.25f);

    std::vector<float> kept = logits, loss(rows);
    be->xent_fused(view(loss, {N}), view(kept, {N, V}), view(targets, {N}), valid, XentGrad::none, 0.25f);
    CHECK(loss == want_loss);
    CHECK(kept == logits);
    std::vector<float> grad = logits;
    std::fill(loss.begin(), loss.end(), 0.0f);
    be->xent_fused(view(loss, {N}), view(grad, {N, V}), view(targets, {N}), valid, XentGrad::in_place, 0.25f);
    CHECK(loss == want_loss);
    CHECK(grad == want_grad);
  }
}
