// StepGuard (see step_guard.h).
#include "app/engine/step_guard.h"

#include <fmt/core.h>

#include <filesystem>
#include <utility>

#include "app/checkpoint/checkpoint_resume.h"

namespace trainer {

StepGuard::StepGuard(const Recipe& recipe, MetricsLog& metrics, Reporting reporting, FaultInjector faults)
    : recipe_(recipe),
      metrics_(metrics),
      reporting_(reporting),
      faults_(std::move(faults)),
      judge_(recipe.train.on_nonfinite, recipe.train.spike) {}

std::string StepGuard::policy_key(const StepVerdict& v) const {
  if (v.kind == BadStepKind::nonfinite)
    return fmt::format("train.on_nonfinite: {}", enum_name(kNonfiniteActionNames, recipe_.train.on_nonfinite));
  return fmt::format("train.spike.action: {}", enum_name(kSpikeActionNames, recipe_.train.spike.action));
}

void StepGuard::record(const StepResult& r, const StepVerdict& v, StepAction done, const std::string& extra_reason,
                       int64_t rolled_back_to) {
  std::vector<std::pair<std::string, double>> fields = {
      {"step", double(r.step)}, {"loss", r.loss}, {"grad_norm", r.grad_norm}};
  if (v.kind == BadStepKind::spike) {
    fields.push_back({"mean_loss", v.mean_loss});
    fields.push_back({"mean_grad_norm", v.mean_grad_norm});
  }
  if (done == StepAction::rollback) {
    fields.push_back({"rolled_back_to", double(rolled_back_to)});
    fields.push_back({"rollbacks", double(rollbacks_)});
  }
  metrics_.write(fields, {{"event", bad_step_kind_name(v.kind)},
                          {"action", step_action_name(done)},
                          {"reason", extra_reason.empty() ? v.reason : v.reason + "; " + extra_reason}});
}

StepOutcome StepGuard::run_step(Trainer& t, const std::string& newest_checkpoint, StepResult& r) {
  r = t.compute_step();
  faults_.apply(r.step, r.loss, r.grad_norm);
  const StepVerdict v = judge_.judge(r.loss, r.grad_norm);
  const bool print = reporting_ == Reporting::on;
  auto stop = [&](const std::string& why) {
    record(r, v, StepAction::stop, why, 0);
    if (print) {
      fmt::print(stderr, "stopping at step {}: {} ({}){}; no update applied; newest checkpoint: {}\n", r.step,
                 v.reason, policy_key(v), why.empty() ? "" : "; " + why,
                 newest_checkpoint.empty() ? "none" : newest_checkpoint);
      std::fflush(stderr);
    }
    return StepOutcome::stopped;
  };
  switch (v.action) {
    case StepAction::apply:
      t.apply_step(r);
      judge_.accept(r.loss, r.grad_norm);
      return StepOutcome::applied;
    case StepAction::warn:
      t.apply_step(r);
      record(r, v, StepAction::warn, "", 0);
      if (print) fmt::print("step {}: warning: {} ({}); update applied\n", r.step, v.reason, policy_key(v));
      return StepOutcome::applied;
    case StepAction::skip:
      t.skip_step(r);
      record(r, v, StepAction::skip, "", 0);
      if (print) fmt::print("step {}: skipped: {} ({}); no update, the step counts\n", r.step, v.reason, policy_key(v));
      return StepOutcome::skipped;
    case StepAction::stop: return stop("");
    case StepAction::rollback: break;
  }
  if (newest_checkpoint.empty())
    return stop(fmt::format("no checkpoint of this run to roll back to yet (checkpoint.every is {}); save more often "
                            "or use skip",
                            recipe_.checkpoint.every));
  if (rollbacks_ >= recipe_.train.max_rollbacks)
    return stop(fmt::format("that would be rollback {} and train.max_rollbacks is {}", rollbacks_ + 1,
                            recipe_.train.max_rollbacks));
  ++rollbacks_;
  {
    TraceScope span(t.tracer(), "rollback", "checkpoint", {TraceArg::str("to", newest_checkpoint)});
    t.set_step(roll_back_to(t.checkpoint_parts(), newest_checkpoint));
  }
  judge_.reset();
  record(r, v, StepAction::rollback, "", t.step());
  if (print) {
    const std::string skipped = r.step == t.step() + 1 ? fmt::format("the batches of step {} are", r.step)
                                                        : fmt::format("the batches of steps {}-{} are", t.step() + 1, r.step);
    fmt::print("step {}: {} ({}): rolled back to {} (step {}); {} skipped (rollback {} of at most {})\n", r.step,
               v.reason, policy_key(v), std::filesystem::path(newest_checkpoint).filename().string(), t.step(),
               skipped, rollbacks_, recipe_.train.max_rollbacks);
    std::fflush(stdout);
  }
  return StepOutcome::rolled_back;
}

}  // namespace trainer
