// Preemption: SIGTERM or SIGINT (what Slurm sends before preemption, or Ctrl-C) asks the
// training loop to finish the current step, write a checkpoint and exit 0; a second signal
// exits at once. The handler can only set a flag, so the flag is one process-wide atomic —
// the single mutable global of the program, confined to this file.
#pragma once

namespace trainer {

class PreemptionGuard {
 public:
  PreemptionGuard();   // installs the handlers
  ~PreemptionGuard();  // restores the previous ones
  PreemptionGuard(const PreemptionGuard&) = delete;
  PreemptionGuard& operator=(const PreemptionGuard&) = delete;
  // The signal received (SIGTERM, SIGINT) or 0.
  int requested() const;
};

}  // namespace trainer
