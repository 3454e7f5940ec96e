// CPU attention over a KV cache: a sequence fed in pieces (a prompt, then single tokens, then a
// few at once) gives the rows attention_forward gives over the whole sequence, with grouped and
// multi-query k/v heads and T = 1; the caches hold exactly the k and v heads of every row at its
// position and nothing past the rows written so far changes.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu attention_cached: pieces of a sequence equal attention_forward over all of it") {
  auto be = make_cpu_backend();
  struct Shape {
    int64_t B, T, H, Hkv, D, t_max;
  };
  uint64_t seed = 40;
  for (const Shape s : {Shape{2, 9, 4, 2, 8, 12}, Shape{1, 7, 3, 1, 5, 7}, Shape{1, 1, 2, 2, 4, 3},
                        Shape{2, 70, 2, 1, 16, 80}}) {
    CAPTURE(s.T);
    CAPTURE(s.Hkv);
    const int64_t W = (s.H + 2 * s.Hkv) * s.D, C = s.H * s.D;
    std::vector<float> qkv = random_floats(size_t(s.B * s.T * W), seed++, -1.5f, 1.5f);
    std::vector<float> want(size_t(s.B * s.T * C)), lse(size_t(s.B * s.H * s.T));
    be->attention_forward(view(want, {s.B, s.T, C}), view(lse, {s.B, s.H, s.T}), view(qkv, {s.B, s.T, W}), int(s.H),
                          int(s.Hkv));

    const float sentinel = 123.0f;
    std::vector<float> kc(size_t(s.B * s.Hkv * s.t_max * s.D), sentinel), vc = kc;
    std::vector<float> got(want.size(), 0.0f);
    // Pieces: the first half, then one row at a time for three rows, then the rest at once.
    std::vector<int64_t> cuts = {0, (s.T + 1) / 2};
    for (int i = 0; i < 3 && cuts.back() < s.T; ++i) cuts.push_back(cuts.back() + 1);
    if (cuts.back() < s.T) cuts.push_back(s.T);
    for (size_t p = 0; p + 1 < cuts.size(); ++p) {
      const int64_t from = cuts[p], n = cuts[p + 1] - from;
      std::vector<float> piece(size_t(s.B * n * W)), out(size_t(s.B * n * C));
      for (int64_t b = 0; b < s.B; ++b)
        std::copy(qkv.begin() + (b * s.T + from) * W, qkv.begin() + (b * s.T + from + n) * W,
                  piece.begin() + b * n * W);
      be->attention_cached(view(out, {s.B * n, C}), view(kc, {s.B, s.Hkv, s.t_max, s.D}),
                           view(vc, {s.B, s.Hkv, s.t_max, s.D}), view(piece, {s.B, n, W}), int(s.H), int(s.Hkv), from);
      for (int64_t b = 0; b < s.B; ++b)
        std::copy(out.begin() + b * n * C, out.begin() + (b + 1) * n * C, got.begin() + (b * s.T + from) * C);
      // Positions past the rows written so far are untouched.
      for (int64_t b = 0; b < s.B; ++b)
        for (int64_t h = 0; h < s.Hkv; ++h)
          for (int64_t t = from + n; t < s.t_max; ++t)
            for (int64_t d = 0; d < s.D; ++d) {
              const size_t at = size_t(((b * s.Hkv + h) * s.t_max + t) * s.D + d);
              REQUIRE(kc[at] == sentinel);
              REQUIRE(vc[at] == sentinel);
            }
    }
    // Relative to the outputs' scale (values are O(1); the floor keeps near-zero ones from
    // turning rounding into large relative errors).
    CHECK(max_rel_diff(got, want, 0.1) < 1e-5);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hkv; ++h)
        for (int64_t t = 0; t < s.T; ++t)
          for (int64_t d = 0; d < s.D; ++d) {
            const size_t at = size_t(((b * s.Hkv + h) * s.t_max + t) * s.D + d);
            const size_t row = size_t((b * s.T + t) * W);
            CHECK(kc[at] == qkv[row + size_t(C + h * s.D + d)]);
            CHECK(vc[at] == qkv[row + size_t(C + (s.Hkv + h) * s.D + d)]);
          }
  }
}

TEST_CASE("cpu attention_cached: one key gives its value, whatever the query") {
  auto be = make_cpu_backend();
  const int64_t H = 2, D = 3, W = 3 * H * D;
  std::vector<float> qkv = random_floats(size_t(W), 7), out(size_t(H * D));
  std::vector<float> kc(size_t(H * 4 * D), 0.0f), vc = kc;
  be->attention_cached(view(out, {1, H * D}), view(kc, {1, H, 4, D}), view(vc, {1, H, 4, D}), view(qkv, {1, 1, W}),
                       int(H), int(H), 0);
  for (int64_t i = 0; i < H * D; ++i) CHECK(out[size_t(i)] == doctest::Approx(qkv[size_t(2 * H * D + i)]));
}
