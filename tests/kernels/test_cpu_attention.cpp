// CPU causal attention: closed forms (T = 1, zero queries), fast path against the reference
// on odd shapes (T = 1, T past one query block and not a multiple of it, grouped and
// multi-query k/v heads), grouped heads against repeated k/v, and the reference backward
// against finite differences.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/reference_attention.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu attention_forward: closed forms") {
  auto be = make_cpu_backend();
  SUBCASE("T = 1: out is v, lse is q.k / sqrt(D)") {
    const int64_t B = 2, H = 3, D = 4, C = H * D;
    auto qkv = random_floats(B * 3 * C, 1);
    std::vector<float> out(B * C), lse(B * H);
    be->attention_forward(view(out, {B, 1, C}), view(lse, {B, H, 1}), view(qkv, {B, 1, 3 * C}),
                          int(H));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        double qk = 0;
        for (int64_t d = 0; d < D; ++d) {
          qk += double(qkv[b * 3 * C + h * D + d]) * qkv[b * 3 * C + C + h * D + d];
          CHECK(out[b * C + h * D + d] == doctest::Approx(qkv[b * 3 * C + 2 * C + h * D + d]));
        }
        CHECK(lse[b * H + h] == doctest::Approx(qk / 2.0).epsilon(1e-5));
      }
    }
  }
  SUBCASE("zero queries: out_i is the mean of v_0..v_i, lse_i = log(i + 1)") {
    const int64_t T = 70, H = 2, D = 3, C = H * D;
    auto qkv = random_floats(T * 3 * C, 2);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) qkv[t * 3 * C + c] = 0;
    std::vector<float> out(T * C), lse(H * T);
    be->attention_forward(view(out, {1, T, C}), view(lse, {1, H, T}), view(qkv, {1, T, 3 * C}),
                          int(H));
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t c = 0; c < C; ++c) {
        double mean = 0;
        for (int64_t j = 0; j <= t; ++j) mean += qkv[j * 3 * C + 2 * C + c];
        CHECK(out[t * C + c] == doctest::Approx(mean / double(t + 1)).epsilon(1e-5));
      }
      for (int64_t h = 0; h < H; ++h)
        CHECK(lse[h * T + t] == doctest::Approx(std::log(double(t + 1))).epsilon(1e-6));
    }
  }
}

TEST_CASE("cpu attention: fast path matches the reference on odd shapes, with grouped k/v heads") {
  auto be = make_cpu_backend();
  struct Shape {
    int64_t B, T, H, Hkv, D;
  };
  uint64_t seed = 10;
  for (Shape s : {Shape{2, 1, 3, 3, 5}, Shape{1, 70, 2, 2, 8}, Shape{2, 130, 1, 1, 3}, Shape{3, 64, 4, 4, 16},
                  Shape{2, 70, 4, 2, 8}, Shape{1, 65, 6, 1, 4}, Shape{2, 9, 6, 3, 2}}) {
    const int64_t C = s.H * s.D, W = (s.H + 2 * s.Hkv) * s.D, rows = s.B * s.T;
    const int kv = int(s.Hkv);
    auto qkv = random_floats(rows * W, ++seed, -2, 2);
    auto dout = random_floats(rows * C, ++seed);
    std::vector<float> out(rows * C), lse(s.B * s.H * s.T), rout(out.size()), rlse(lse.size());
    be->attention_forward(view(out, {s.B, s.T, C}), view(lse, {s.B, s.H, s.T}), view(qkv, {s.B, s.T, W}),
                          int(s.H), kv);
    ref::attention_forward<float>(rout.data(), rlse.data(), qkv.data(), s.B, s.T, s.H, s.Hkv, s.D);
    const std::string what = "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " H=" + std::to_string(s.H) +
                             " Hkv=" + std::to_string(s.Hkv) + " D=" + std::to_string(s.D);
    check_close(out, rout, 1e-4, 1e-5, what + " out");
    check_close(lse, rlse, 1e-5, 1e-5, what + " lse");
    auto dqkv = random_floats(qkv.size(), ++seed);  // overwritten, not accumulated
    std::vector<float> rdqkv(qkv.size());
    be->attention_backward(view(dqkv, {s.B, s.T, W}), view(dout, {s.B, s.T, C}), view(qkv, {s.B, s.T, W}),
                           view(out, {s.B, s.T, C}), view(lse, {s.B, s.H, s.T}), int(s.H), kv);
    ref::attention_backward<float>(rdqkv.data(), dout.data(), qkv.data(), rlse.data(), s.B, s.T, s.H, s.Hkv, s.D);
    check_close(dqkv, rdqkv, 1e-4, 2e-5, what + " dqkv");
  }
}

TEST_CASE("cpu attention: the document mask matches the reference, and each document equals attention alone") {
  auto be = make_cpu_backend();
  struct Shape {
    int64_t B, T, H, Hkv, D, max_len;
  };
  uint64_t seed = 300;
  // Documents shorter than, around and longer than the 64-row query blocks; one of one token.
  for (Shape s : {Shape{2, 70, 4, 2, 8, 9}, Shape{1, 130, 2, 1, 4, 80}, Shape{3, 17, 3, 3, 5, 1},
                  Shape{2, 200, 2, 2, 6, 40}}) {
    const int64_t C = s.H * s.D, W = (s.H + 2 * s.Hkv) * s.D, rows = s.B * s.T;
    const int kv = int(s.Hkv);
    RandomDocuments docs = random_documents(s.B, s.T, s.max_len, ++seed);
    auto qkv = random_floats(rows * W, ++seed, -2, 2);
    auto dout = random_floats(rows * C, ++seed);
    std::vector<float> out(rows * C), lse(s.B * s.H * s.T), rout(out.size()), rlse(lse.size());
    Tensor doc = view(docs.doc_start, {s.B, s.T});
    be->attention_forward(view(out, {s.B, s.T, C}), view(lse, {s.B, s.H, s.T}), view(qkv, {s.B, s.T, W}), int(s.H),
                          kv, doc);
    ref::attention_forward<float>(rout.data(), rlse.data(), qkv.data(), s.B, s.T, s.H, s.Hkv, s.D,
                                  docs.doc_start.data());
    const std::string what = "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) +
                             " documents up to " + std::to_string(s.max_len);
    check_close(out, rout, 1e-4, 1e-5, what + " out");
    check_close(lse, rlse, 1e-5, 1e-5, what + " lse");
    std::vector<float> dqkv(qkv.size()), rdqkv(qkv.size());
    be->attention_backward(view(dqkv, {s.B, s.T, W}), view(dout, {s.B, s.T, C}), view(qkv, {s.B, s.T, W}),
                           view(out, {s.B, s.T, C}), view(lse, {s.B, s.H, s.T}), int(s.H), kv, doc);
    ref::attention_backward<float>(rdqkv.data(), dout.data(), qkv.data(), rlse.data(), s.B, s.T, s.H, s.Hkv, s.D,
                                   docs.doc_start.data());
    check_close(dqkv, rdqkv, 1e-4, 2e-5, what + " dqkv");
    // Row 0's first document as a sequence of its own: the same outputs and gradients.
    int64_t n = 1;
    while (n < s.T && docs.doc_start[size_t(n)] == 0) ++n;
    std::vector<float> q1(qkv.begin(), qkv.begin() + n * W), d1(dout.begin(), dout.begin() + n * C);
    std::vector<float> o1(n * C), l1(s.H * n), g1(n * W);
    be->attention_forward(view(o1, {1, n, C}), view(l1, {1, s.H, n}), view(q1, {1, n, W}), int(s.H), kv);
    be->attention_backward(view(g1, {1, n, W}), view(d1, {1, n, C}), view(q1, {1, n, W}), view(o1, {1, n, C}),
                           view(l1, {1, s.H, n}), int(s.H), kv);
    check_close(std::vector<float>(out.begin(), out.begin() + n * C), o1, 1e-5, 1e-6, what + " first document alone");
    check_close(std::vector<float>(dqkv.begin(), dqkv.begin() + n * W), g1, 1e-5, 1e-6,
                what + " first document's gradient alone");
  }
}

TEST_CASE("cpu attention: grouped k/v heads equal multi-head attention with the k/v heads repeated") {
  auto be = make_cpu_backend();
  const int64_t B = 2, T = 11, H = 4, Hkv = 2, D = 4, C = H * D, Wg = (H + 2 * Hkv) * D, Wm = 3 * C;
  auto qkv = random_floats(B * T * Wg, 77, -2, 2);
  std::vector<float> full(B * T * Wm);
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) {
        full[r * Wm + h * D + d] = qkv[r * Wg + h * D + d];
        full[r * Wm + C + h * D + d] = qkv[r * Wg + C + (h / 2) * D + d];
        full[r * Wm + 2 * C + h * D + d] = qkv[r * Wg + C + Hkv * D + (h / 2) * D + d];
      }
  std::vector<float> out(B * T * C), lse(B * H * T), out_full(out.size()), lse_full(lse.size());
  be->attention_forward(view(out, {B, T, C}), view(lse, {B, H, T}), view(qkv, {B, T, Wg}), int(H), int(Hkv));
  be->attention_forward(view(out_full, {B, T, C}), view(lse_full, {B, H, T}), view(full, {B, T, Wm}), int(H));
  CHECK(bitwise_equal(out, out_full));
  CHECK(bitwise_equal(lse, lse_full));
}

TEST_CASE("cpu attention_backward: reference against finite differences") {
  for (int64_t Hkv : {2, 1}) {
    const int64_t B = 2, T = 5, H = 2, D = 3, C = H * D, W = (H + 2 * Hkv) * D;
    auto qkv = to_double(random_floats(B * T * W, 40, -1.5, 1.5));
    auto dout = to_double(random_floats(B * T * C, 41));
    auto loss = [&] {
      std::vector<double> out(B * T * C), lse(B * H * T);
      ref::attention_forward<double>(out.data(), lse.data(), qkv.data(), B, T, H, Hkv, D);
      return dot(dout, out);
    };
    std::vector<double> out(B * T * C), lse(B * H * T), dqkv(qkv.size());
    ref::attention_forward<double>(out.data(), lse.data(), qkv.data(), B, T, H, Hkv, D);
    ref::attention_backward<double>(dqkv.data(), dout.data(), qkv.data(), lse.data(), B, T, H, Hkv, D);
    check_close(dqkv, numeric_gradient(qkv, loss), 1e-6, 1e-8, "dqkv Hkv=" + std::to_string(Hkv));
  }
}

TEST_CASE("cpu attention: n_kv_head must divide n_head") {
  auto be = make_cpu_backend();
  std::vector<float> qkv(2 * 10 * 2), out(2 * 4 * 2), lse(4 * 2);
  CHECK_THROWS_AS(be->attention_forward(view(out, {1, 2, 8}), view(lse, {1, 4, 2}), view(qkv, {1, 2, 20}), 4, 3),
                  std::logic_error);
}

TEST_CASE("cpu attention: n_head must divide the channels") {
  auto be = make_cpu_backend();
  std::vector<float> qkv(2 * 3 * 6), out(2 * 6), lse(2 * 4);
  CHECK_THROWS_AS(be->attention_forward(view(out, {1, 2, 6}), view(lse, {1, 4, 2}),
                                        view(qkv, {1, 2, 18}), 4),
                  std::logic_error);
}
