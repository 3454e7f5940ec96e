// lr_at for every schedule kind at warm-up, through the decay and at and after the end, against
// the closed forms of lr_schedule.h worked out by hand (max_lr 1, warm-up 10 of 110 steps,
// min_lr_ratio 0.1, so the decay runs over steps 10..110 and ends at 0.1).
#include <doctest/doctest.h>

#include <string>

#include "model/lr_schedule.h"

using namespace trainer;

namespace {

LrSchedule schedule(LrKind kind) {
  LrSchedule s;
  s.kind = kind;
  s.max_lr = 1.0;
  s.warmup_steps = 10;
  s.total_steps = 110;
  s.min_lr_ratio = 0.1;
  s.decay_fraction = 0.2;
  return s;
}

doctest::Approx near(double x) { return doctest::Approx(x).epsilon(1e-12); }

}  // namespace

TEST_CASE("lr_at: linear warm-up is the same for every kind, (s + 1) / warmup of max_lr") {
  for (LrKind kind : {LrKind::constant, LrKind::linear, LrKind::cosine, LrKind::wsd}) {
    CAPTURE(lr_kind_name(kind));
    const LrSchedule s = schedule(kind);
    CHECK(lr_at(s, 0) == near(0.1));
    CHECK(lr_at(s, 4) == near(0.5));
    CHECK(lr_at(s, 9) == near(1.0));
    CHECK(lr_at(s, 10) == near(1.0));  // first step after the warm-up: the decay's start
  }
}

TEST_CASE("lr_at: constant stays at max_lr through the end and beyond") {
  const LrSchedule s = schedule(LrKind::constant);
  CHECK(lr_at(s, 60) == near(1.0));
  CHECK(lr_at(s, 110) == near(1.0));
  CHECK(lr_at(s, 1000) == near(1.0));
}

TEST_CASE("lr_at: linear decays to min_lr at the end and stays there") {
  const LrSchedule s = schedule(LrKind::linear);
  CHECK(lr_at(s, 35) == near(1.0 - 0.9 * 0.25));  // a quarter of the way
  CHECK(lr_at(s, 60) == near(0.55));              // half way
  CHECK(lr_at(s, 109) == near(0.109));
  CHECK(lr_at(s, 110) == near(0.1));
  CHECK(lr_at(s, 500) == near(0.1));
}

TEST_CASE("lr_at: cosine follows half a cosine from max_lr to min_lr") {
  const LrSchedule s = schedule(LrKind::cosine);
  CHECK(lr_at(s, 35) == near(0.1 + 0.45 * (1.0 + 0.70710678118654752)));  // cos(pi / 4)
  CHECK(lr_at(s, 60) == near(0.55));                                      // cos(pi / 2) = 0
  CHECK(lr_at(s, 85) == near(0.1 + 0.45 * (1.0 - 0.70710678118654752)));  // cos(3 pi / 4)
  CHECK(lr_at(s, 110) == near(0.1));
  CHECK(lr_at(s, 200) == near(0.1));
}

TEST_CASE("lr_at: wsd holds max_lr until the last decay_fraction, then decays linearly") {
  const LrSchedule s = schedule(LrKind::wsd);
  CHECK(lr_at(s, 60) == near(1.0));
  CHECK(lr_at(s, 90) == near(1.0));    // progress 0.8: the decay starts here
  CHECK(lr_at(s, 95) == near(0.775));  // a quarter into the decay
  CHECK(lr_at(s, 100) == near(0.55));  // half way
  CHECK(lr_at(s, 110) == near(0.1));
  CHECK(lr_at(s, 300) == near(0.1));
}

TEST_CASE("lr_at: without warm-up step 0 is max_lr, and a warm-up as long as the run never decays") {
  LrSchedule s = schedule(LrKind::cosine);
  s.warmup_steps = 0;
  CHECK(lr_at(s, 0) == near(1.0));
  CHECK(lr_at(s, 55) == near(0.55));  // half of 110 steps
  s.warmup_steps = 110;
  CHECK(lr_at(s, 109) == near(1.0));
  CHECK(lr_at(s, 110) == near(1.0));  // span clamps to one step: progress 0
  CHECK(lr_at(s, 111) == near(0.1));
}

TEST_CASE("lr_kind_name: the recipe's spelling of every kind") {
  CHECK(std::string(lr_kind_name(LrKind::constant)) == "constant");
  CHECK(std::string(lr_kind_name(LrKind::linear)) == "linear");
  CHECK(std::string(lr_kind_name(LrKind::cosine)) == "cosine");
  CHECK(std::string(lr_kind_name(LrKind::wsd)) == "wsd");
}
