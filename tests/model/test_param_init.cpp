// Parameter init (model/param_table.h): init_values over any range and any thread count gives
// exactly init_value of every element, so a parallel init starts every layout from the same
// weights.
#include <doctest/doctest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "model/param_table.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

TEST_CASE("param init: init_values equals init_value element by element, for any range and thread count") {
  const GptConfig cfg = trainer::testing::tiny_gpt_config();
  const int saved = omp_get_max_threads();
  for (const ParamSpec& spec : gpt2_param_table(cfg)) {
    CAPTURE(spec.name);
    const int64_t n = spec.numel();
    for (int threads : {1, 3}) {
      omp_set_num_threads(threads);
      const int64_t begin = n > 7 ? 5 : 0;
      std::vector<float> got(size_t(n - begin));
      init_values(cfg, spec, 1234, begin, n - begin, got.data());
      for (int64_t i = begin; i < n; ++i) {
        const float want = init_value(cfg, spec, 1234, i);
        REQUIRE(std::memcmp(&got[size_t(i - begin)], &want, sizeof want) == 0);
      }
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("param init: normal weights have the configured spread, padded vocabulary rows are zero") {
  GptConfig cfg = trainer::testing::gpt_config(2, 2, 64, 500, 512, 8);
  cfg.init_std = 0.02f;
  int checked = 0;
  for (const ParamSpec& spec : gpt2_param_table(cfg)) {
    if (spec.name != "wte.weight" && spec.name != "h.0.attn.c_proj.weight") continue;
    ++checked;
    CAPTURE(spec.name);
    std::vector<float> v(size_t(spec.numel()));
    init_values(cfg, spec, 7, 0, spec.numel(), v.data());
    const int64_t used = spec.name == "wte.weight" ? int64_t(500) * 64 : spec.numel();
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < used; ++i) {
      sum += v[size_t(i)];
      sq += double(v[size_t(i)]) * v[size_t(i)];
    }
    for (int64_t i = used; i < spec.numel(); ++i) REQUIRE(v[size_t(i)] == 0.0f);
    const double mean = sum / double(used), sd = std::sqrt(sq / double(used) - mean * mean);
    // c_proj is a residual projection: std / sqrt(2 n_layer).
    const double want = spec.name == "wte.weight" ? 0.02 : 0.02 / std::sqrt(4.0);
    CHECK(std::abs(mean) < 4 * want / std::sqrt(double(used)));
    CHECK(std::abs(sd - want) < 0.03 * want);
  }
  CHECK(checked == 2);
}
