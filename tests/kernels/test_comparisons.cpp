// The tests' own comparisons see a NaN wherever it is: every "worst error" search
// (check_close in device_tensors.h and kernel_test_util.h, max_rel_diff, the training harness's
// weight comparison) keeps a NaN as the worst once met. The old `!(err <= worst)` let the next
// number replace it, so a NaN anywhere but in the last element went unseen.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tests/support/test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("is_worse keeps a NaN as the worst, wherever it comes") {
  CHECK(is_worse(2.0, 1.0));
  CHECK(!is_worse(1.0, 2.0));
  CHECK(!is_worse(1.0, 1.0));
  CHECK(is_worse(NAN, 5.0));
  CHECK(!is_worse(5.0, NAN));
  CHECK(!is_worse(NAN, NAN));
  double worst = 0;
  for (double e : {0.1, double(NAN), 0.2, 0.05})
    if (is_worse(e, worst)) worst = e;
  CHECK(std::isnan(worst));
}

TEST_CASE("max_rel_diff is NaN when any element's difference is, first, middle or last") {
  const std::vector<float> want{1, 2, 3, 4};
  for (size_t at = 0; at < want.size(); ++at) {
    CAPTURE(at);
    std::vector<float> got = want;
    got[at] = NAN;
    CHECK(std::isnan(max_rel_diff(got, want)));
  }
  CHECK(max_rel_diff({1, 2, 3, 4.4f}, want) == doctest::Approx(0.1));
}

}  // namespace
}  // namespace trainer::testing
