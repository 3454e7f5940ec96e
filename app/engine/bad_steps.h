// Bad steps: the judgement the training loop passes on each computed step before its update.
// A step is bad when its loss or gradient norm is not finite (train.on_nonfinite) or spikes:
// above train.spike.factor x the mean of that quantity over the last train.spike.window
// accepted steps (train.spike.action). The verdict says what to do: apply the update, apply it
// with a warning, skip it (the step is counted, nothing is updated), roll back to the newest
// checkpoint past the step's batches, or stop the run.
// Invariants: the judge sees the same loss and norm on every rank (both are all-reduced over
// the world), so every rank reaches the same verdict without talking. Only steps judged ok
// join the window (a spike does not raise the mean it is measured against). The window starts
// empty at the start of a process and after a rollback, so a rolled-back run judges exactly as
// a run resumed from the same checkpoint would.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "app/recipe/recipe.h"
#include "kernels/base/enum_names.h"

namespace trainer {

enum class StepAction : uint8_t { apply, warn, skip, rollback, stop };
inline constexpr EnumName<StepAction> kStepActionNames[] = {{StepAction::apply, "apply"},
                                                            {StepAction::warn, "warn"},
                                                            {StepAction::skip, "skip"},
                                                            {StepAction::rollback, "rollback"},
                                                            {StepAction::stop, "stop"}};
inline const char* step_action_name(StepAction a) { return enum_name(kStepActionNames, a); }
// The "event" of a metrics record about a bad step.
enum class BadStepKind : uint8_t { none, nonfinite, spike };
inline constexpr EnumName<BadStepKind> kBadStepKindNames[] = {
    {BadStepKind::none, "none"}, {BadStepKind::nonfinite, "nonfinite"}, {BadStepKind::spike, "spike"}};
inline const char* bad_step_kind_name(BadStepKind k) { return enum_name(kBadStepKindNames, k); }

struct StepVerdict {
  BadStepKind kind = BadStepKind::none;
  StepAction action = StepAction::apply;
  double mean_loss = 0;  // the window's means (spikes only)
  double mean_grad_norm = 0;
  std::string reason;  // "loss nan is not finite", "loss 31.2 > 3 x mean 4.1 over 50 steps"
};

class StepJudge {
 public:
  StepJudge(NonfiniteAction on_nonfinite, const SpikeConfig& spike);
  StepVerdict judge(double loss, double grad_norm) const;
  // A step whose verdict was ok joins the window (the oldest leaves once it is full).
  void accept(double loss, double grad_norm);
  // Empties the window (after a rollback).
  void reset();

 private:
  NonfiniteAction on_nonfinite_;
  SpikeConfig spike_;
  std::deque<double> losses_, norms_;
};

}  // namespace trainer
