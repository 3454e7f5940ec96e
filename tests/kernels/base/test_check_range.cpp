// TRAINER_CHECK (kernels/base/check.h): a failed check throws std::logic_error naming the call
// site, the condition and the message, which is built only when the check fails. Range
// (kernels/base/range.h): size, empty and intersect, which never yields end < begin.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "kernels/base/check.h"
#include "kernels/base/range.h"

using namespace trainer;

TEST_CASE("check: a failed check names the file, the line, the condition and the message") {
  const int line = __LINE__ + 2;
  try {
    TRAINER_CHECK(1 + 1 == 3, "arithmetic");
    FAIL("the check passed");
  } catch (const std::logic_error& e) {
    CHECK(std::string(e.what()) == std::string("internal error at ") + __FILE__ + ":" + std::to_string(line) +
                                       ": check `1 + 1 == 3` failed: arithmetic");
  }
  int built = 0;
  auto message = [&] {
    ++built;
    return std::string("never");
  };
  TRAINER_CHECK(true, message());
  CHECK(built == 0);
  CHECK_THROWS_WITH_AS([] { TRAINER_CHECK(false, ""); }(), doctest::Contains("check `false` failed"), std::logic_error);
}

TEST_CASE("range: size, empty and intersect") {
  const Range a{2, 10}, b{5, 20}, c{12, 15};
  CHECK(a.size() == 8);
  CHECK(!a.empty());
  CHECK(Range{3, 3}.empty());
  const Range ab = intersect(a, b);
  CHECK(ab.begin == 5);
  CHECK(ab.end == 10);
  const Range ac = intersect(a, c);
  CHECK(ac.empty());
  CHECK(ac.begin == 12);
  CHECK(ac.end == 12);
}
