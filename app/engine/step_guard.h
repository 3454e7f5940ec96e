// StepGuard: one training step under the bad-step policy (bad_steps.h). It computes the step,
// lets the fault injector (fault_injection.h) tamper with the judged values, asks the judge,
// and carries out the verdict: apply the update, warn and apply, skip the update, roll back to
// this run's newest checkpoint past the step's batches, or stop. Every bad step is printed by
// the reporting rank and written to the metrics file as an event record:
//   {"step": 7, "loss": ..., "grad_norm": ..., [mean_loss, mean_grad_norm,]
//    [rolled_back_to, rollbacks,] "event": "spike", "action": "rollback", "reason": "..."}
// Invariant: every rank reaches the same verdict (the judged values are job-wide), so the
// collective reload of a rollback is entered by all ranks together.
#pragma once

#include <cstdint>
#include <string>

#include "app/engine/bad_steps.h"
#include "app/engine/fault_injection.h"
#include "app/engine/metrics.h"
#include "app/engine/trainer.h"

namespace trainer {

enum class StepOutcome : uint8_t { applied, skipped, rolled_back, stopped };

class StepGuard {
 public:
  StepGuard(const Recipe& recipe, MetricsLog& metrics, Reporting reporting, FaultInjector faults);

  // newest_checkpoint: this run's newest checkpoint directory ("" = none yet). On
  // rolled_back, trainer.step() is that checkpoint's step; on stopped, the message has been
  // printed and the run should end with kBadStepExitCode.
  StepOutcome run_step(Trainer& trainer, const std::string& newest_checkpoint, StepResult& result);
  int rollbacks() const { return rollbacks_; }

 private:
  void record(const StepResult& r, const StepVerdict& v, StepAction done, const std::string& extra_reason,
              int64_t rolled_back_to);
  std::string policy_key(const StepVerdict& v) const;

  const Recipe& recipe_;
  MetricsLog& metrics_;
  Reporting reporting_;
  FaultInjector faults_;
  StepJudge judge_;
  int rollbacks_ = 0;
};

// The exit code of a run that a bad step stopped (train.on_nonfinite: stop, a rollback past
// train.max_rollbacks or without a checkpoint): neither a user error (2) nor a crash (1).
inline constexpr int kBadStepExitCode = 4;

}  // namespace trainer
