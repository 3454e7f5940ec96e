// The bad-step judge (app/engine/bad_steps.h) and the fault injector's environment format
// (app/engine/fault_injection.h).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "app/engine/bad_steps.h"
#include "app/engine/fault_injection.h"
#include "kernels/base/errors.h"

using namespace trainer;

namespace {

SpikeConfig spike(double factor, int window, SpikeAction action) {
  SpikeConfig s;
  s.factor = factor;
  s.window = window;
  s.action = action;
  return s;
}

std::string fault_error(const std::string& nan, const std::string& spikes) {
  try {
    FaultInjector f(nan, spikes);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bad steps: a NaN or infinite loss or norm gets the on_nonfinite action") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (auto [policy, action] : {std::pair{NonfiniteAction::stop, StepAction::stop},
                                std::pair{NonfiniteAction::skip, StepAction::skip},
                                std::pair{NonfiniteAction::rollback, StepAction::rollback}}) {
    StepJudge judge(policy, SpikeConfig{});
    CHECK(judge.judge(3.0, 1.0).action == StepAction::apply);
    StepVerdict v = judge.judge(nan, 1.0);
    CHECK(v.kind == BadStepKind::nonfinite);
    CHECK(v.action == action);
    CHECK(v.reason == "loss nan is not finite");
    v = judge.judge(3.0, inf);
    CHECK(v.action == action);
    CHECK(v.reason == "gradient norm inf is not finite");
  }
}

TEST_CASE("bad steps: a spike is judged against a full window of accepted steps only") {
  StepJudge judge(NonfiniteAction::stop, spike(3, 4, SpikeAction::skip));
  // Not judged before the window is full.
  for (int i = 0; i < 3; ++i) {
    CHECK(judge.judge(100.0, 1.0).action == StepAction::apply);
    judge.accept(2.0, 1.0);
  }
  CHECK(judge.judge(100.0, 1.0).action == StepAction::apply);
  judge.accept(2.0, 1.0);  // full: mean loss 2, mean norm 1
  CHECK(judge.judge(6.0, 3.0).action == StepAction::apply);  // equal to factor x mean is no spike
  StepVerdict v = judge.judge(6.5, 1.0);
  CHECK(v.kind == BadStepKind::spike);
  CHECK(v.action == StepAction::skip);
  CHECK(v.mean_loss == 2.0);
  CHECK(v.reason == "loss 6.5 > 3 x mean 2 over 4 steps");
  v = judge.judge(2.0, 3.5);
  CHECK(v.kind == BadStepKind::spike);
  CHECK(v.reason == "gradient norm 3.5 > 3 x mean 1 over 4 steps");
  // The oldest leaves: four steps of loss 4 make the mean 4.
  for (int i = 0; i < 4; ++i) judge.accept(4.0, 1.0);
  CHECK(judge.judge(6.5, 1.0).action == StepAction::apply);
  // After a rollback the window refills before judging again.
  judge.reset();
  CHECK(judge.judge(1000.0, 1.0).action == StepAction::apply);
  // A NaN is non-finite whatever the spike settings.
  CHECK(judge.judge(std::nan(""), 1.0).action == StepAction::stop);
}

TEST_CASE("bad steps: spike detection off (factor 0) keeps no window") {
  StepJudge judge(NonfiniteAction::skip, spike(0, 1, SpikeAction::rollback));
  judge.accept(1.0, 1.0);
  CHECK(judge.judge(1e9, 1e9).action == StepAction::apply);
}

TEST_CASE("fault injection: each listed step fires once") {
  FaultInjector f("3,5", "4:10");
  double loss = 2.0, norm = 1.0;
  CHECK(!f.apply(1, loss, norm));
  CHECK(loss == 2.0);
  CHECK(f.apply(3, loss, norm));
  CHECK(std::isnan(loss));
  CHECK(std::isnan(norm));
  loss = 2.0;
  norm = 1.0;
  CHECK(!f.apply(3, loss, norm));  // step 3 again (after a rollback): left alone
  CHECK(loss == 2.0);
  CHECK(f.apply(4, loss, norm));
  CHECK(loss == 20.0);
  CHECK(norm == 1.0);
  CHECK(FaultInjector("", "").empty());
}

TEST_CASE("fault injection: a malformed variable names itself and the valid form") {
  CHECK(fault_error("x", "") ==
        "TRAINER_FAULT_NAN_STEP=x: not a list of steps N >= 1; valid e.g. 5 or 5,9");
  CHECK(fault_error("0", "").find("TRAINER_FAULT_NAN_STEP=0: ") == 0);
  CHECK(fault_error("5,", "").find("TRAINER_FAULT_NAN_STEP=5,: ") == 0);
  CHECK(fault_error("", "7") ==
        "TRAINER_FAULT_SPIKE_STEP=7: not a list of STEP:FACTOR pairs (step >= 1, factor a finite number > 0); "
        "valid e.g. 7:10 or 7:10,12:4");
  CHECK(fault_error("", "7:-1").find("TRAINER_FAULT_SPIKE_STEP=7:-1: ") == 0);
  CHECK(fault_error("", "7:nan").find("TRAINER_FAULT_SPIKE_STEP=7:nan: ") == 0);
  CHECK(fault_error("", "7:2x").find("TRAINER_FAULT_SPIKE_STEP=7:2x: ") == 0);
  CHECK(fault_error("5", "7:2.5,9:3") == "");
}
