// Fault injection for testing the bad-step policies (bad_steps.h) deterministically: two
// environment variables name steps whose judged loss is replaced, each once per process:
//   TRAINER_FAULT_NAN_STEP=N[,N...]            loss and gradient norm become NaN at step N
//   TRAINER_FAULT_SPIKE_STEP=N:F[,N:F...]      loss becomes F x its value at step N
// Only the values the judge sees change (the gradients are the real ones), which is enough
// for every policy: none of them applies such a step's update except spike warn, whose update
// is the real one. "Once" means the first time the process computes step N: after a rollback
// past step N the step is computed again from other batches and left alone, as a bad batch
// would be. Every rank reads the same environment (mpiexec passes it on), so all inject alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

struct InjectedFault {
  int64_t step = 0;
  bool nan = false;    // else a spike
  double factor = 1;   // spike: loss multiplier
  bool fired = false;
};

class FaultInjector {
 public:
  // The variables' texts ("" = unset); malformed text is a ConfigError naming the variable,
  // the text and the valid form.
  FaultInjector(const std::string& nan_steps, const std::string& spike_steps);
  // From TRAINER_FAULT_NAN_STEP and TRAINER_FAULT_SPIKE_STEP.
  static FaultInjector from_environment();
  // Applies the faults of `step` (1-based) not fired yet; true when one fired.
  bool apply(int64_t step, double& loss, double& grad_norm);
  bool empty() const { return faults_.empty(); }

 private:
  std::vector<InjectedFault> faults_;
};

}  // namespace trainer
