// CPU layernorm: closed form, fast path against the reference on odd shapes (both dinp modes,
// accumulation into dweight/dbias), and the reference backward against finite differences.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_layernorm.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu layernorm_forward: closed form") {
  auto be = make_cpu_backend();
  std::vector<float> x = {1, 2, 3, 4, -3, -3, -3, -3};  // (2,4); second row constant
  std::vector<float> w = {1, 2, 1, 1}, b = {0, 0, 0, 1};
  std::vector<float> out(8), mean(2), rstd(2);
  be->layernorm_forward(view(out, {2, 4}), view(mean, {2}), view(rstd, {2}), view(x, {2, 4}),
                        view(w, {4}), view(b, {4}));
  const double s = 1.0 / std::sqrt(1.25 + 1e-5);  // biased variance of 1..4 is 1.25
  CHECK(mean[0] == doctest::Approx(2.5).epsilon(1e-7));
  CHECK(rstd[0] == doctest::Approx(s).epsilon(1e-6));
  const double want0[] = {-1.5 * s, -0.5 * s * 2, 0.5 * s, 1.5 * s + 1};
  for (int c = 0; c < 4; ++c) CHECK(out[c] == doctest::Approx(want0[c]).epsilon(1e-6));
  CHECK(mean[1] == doctest::Approx(-3.0));
  CHECK(rstd[1] == doctest::Approx(1.0 / std::sqrt(1e-5)).epsilon(1e-5));
  for (int c = 0; c < 4; ++c) CHECK(out[4 + c] == doctest::Approx(b[c]));
}

TEST_CASE("cpu layernorm: fast path matches the reference on odd shapes") {
  auto be = make_cpu_backend();
  struct Shape {
    int64_t N, C;
  };
  uint64_t seed = 100;
  for (Shape sh : {Shape{1, 1}, Shape{1, 13}, Shape{37, 200}, Shape{5, 768}, Shape{33, 1000}}) {
    const auto N = sh.N, C = sh.C;
    auto x = random_floats(N * C, ++seed, -2, 3), w = random_floats(C, ++seed);
    auto b = random_floats(C, ++seed), dout = random_floats(N * C, ++seed);
    std::vector<float> out(N * C), mean(N), rstd(N), rout(N * C), rmean(N), rrstd(N);
    be->layernorm_forward(view(out, {N, C}), view(mean, {N}), view(rstd, {N}), view(x, {N, C}),
                          view(w, {C}), view(b, {C}));
    ref::layernorm_forward<float>(rout.data(), rmean.data(), rrstd.data(), x.data(), w.data(),
                                  b.data(), N, C);
    const std::string what = "N=" + std::to_string(N) + " C=" + std::to_string(C);
    check_close(out, rout, 1e-5, 1e-5, what + " out");
    check_close(mean, rmean, 1e-5, 1e-6, what + " mean");
    check_close(rstd, rrstd, 1e-5, 1e-5, what + " rstd");
    for (Accumulate mode : {Accumulate::overwrite, Accumulate::add}) {
      auto dinp = random_floats(N * C, ++seed), dw = random_floats(C, ++seed);
      auto db = random_floats(C, ++seed);
      auto rdinp = dinp, rdw = dw, rdb = db;
      be->layernorm_backward(view(dinp, {N, C}), view(dw, {C}), view(db, {C}), view(dout, {N, C}),
                             view(x, {N, C}), view(w, {C}), view(mean, {N}), view(rstd, {N}),
                             mode);
      ref::layernorm_backward<float>(rdinp.data(), rdw.data(), rdb.data(), dout.data(), x.data(),
                                     w.data(), mean.data(), rstd.data(), N, C, mode);
      check_close(dinp, rdinp, 1e-4, 1e-5, what + " dinp");
      check_close(dw, rdw, 1e-5, 1e-5, what + " dweight");
      check_close(db, rdb, 1e-5, 1e-5, what + " dbias");
    }
  }
}

TEST_CASE("cpu layernorm_backward: reference against finite differences") {
  const int64_t N = 3, C = 7;
  auto x = to_double(random_floats(N * C, 201, -2, 2)), w = to_double(random_floats(C, 202));
  auto b = to_double(random_floats(C, 203)), dout = to_double(random_floats(N * C, 204));
  auto loss = [&] {
    std::vector<double> out(N * C), mean(N), rstd(N);
    ref::layernorm_forward<double>(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                   b.data(), N, C);
    return dot(dout, out);
  };
  std::vector<double> out(N * C), mean(N), rstd(N), dinp(N * C), dw(C, 0.0), db(C, 0.0);
  ref::layernorm_forward<double>(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                 b.data(), N, C);
  ref::layernorm_backward<double>(dinp.data(), dw.data(), db.data(), dout.data(), x.data(),
                                  w.data(), mean.data(), rstd.data(), N, C, Accumulate::overwrite);
  check_close(dinp, numeric_gradient(x, loss), 1e-6, 1e-8, "dinp");
  check_close(dw, numeric_gradient(w, loss), 1e-6, 1e-8, "dweight");
  check_close(db, numeric_gradient(b, loss), 1e-6, 1e-8, "dbias");
}

TEST_CASE("cpu layernorm: accepts (B,T,C) views and rejects mismatched shapes") {
  auto be = make_cpu_backend();
  std::vector<float> x = random_floats(2 * 3 * 5, 300), w(5, 1.0f), b(5, 0.0f);
  std::vector<float> out(30), mean(6), rstd(6);
  be->layernorm_forward(view(out, {2, 3, 5}), view(mean, {2, 3}), view(rstd, {6}),
                        view(x, {2, 3, 5}), view(w, {5}), view(b, {5}));
  std::vector<float> rout(30), rmean(6), rrstd(6);
  ref::layernorm_forward<float>(rout.data(), rmean.data(), rrstd.data(), x.data(), w.data(),
                                b.data(), 6, 5);
  check_close(out, rout, 1e-5, 1e-6, "(B,T,C) out");
  CHECK_THROWS_AS(be->layernorm_forward(view(out, {6, 5}), view(mean, {6}), view(rstd, {6}),
                                        view(x, {6, 5}), view(w, {4}), view(b, {5})),
                  std::logic_error);
}
