// The parts of the training loop (train_loop.cpp), each deciding for itself when it is due
// after a step: the progress line and its metrics record (log.every), evaluation (eval.every),
// samples (log.sample_every), the data-stage note (data.stages), stopping (a signal on any
// rank, --stop-at) and saves (checkpoint.every, the end, a stop). The driver only calls them
// in order, so the order of their output lines is fixed here once:
//   before a step: data stage; after it: progress, eval, sample, stop decision, save.
// Invariants: every part is collective where the loop was (eval, sample, the stop decision's
// all-reduce and saves run on every rank); only the rank with Reporting::on prints, and
// evaluation, sampling and saves are timed apart from the steps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "app/checkpoint/checkpoint_writer.h"
#include "app/plan/flops.h"
#include "app/engine/metrics.h"
#include "app/engine/preemption.h"
#include "app/engine/trainer.h"
#include "data/tokenizer.h"

namespace trainer {

// The progress line every log.every steps (and at steps 1 and the last), with tokens/s and
// MFU over the interval's steps alone.
class ProgressPart {
 public:
  ProgressPart(Trainer& t, MetricsLog& metrics, Reporting reporting);
  // A step that counted (not rolled back) took step_s.
  void after_step(const Trainer& t, const StepResult& last, double step_s);
  // A rollback: the interval starts again.
  void restart_interval();
  // Steps and their time over the whole run (rolled-back ones' time included).
  void add_run_time(double step_s) { run_step_s_ += step_s; }
  int64_t steps_done() const { return steps_done_; }
  double run_step_s() const { return run_step_s_; }
  double began() const { return t_begin_; }

 private:
  MetricsLog& metrics_;
  Reporting reporting_;
  DevicePeak peak_;
  double flops_tok_;
  double t_begin_;
  double interval_step_s_ = 0, run_step_s_ = 0;
  int64_t interval_steps_ = 0, steps_done_ = 0;
};

// Validation loss at step 0, every eval.every steps and at the end.
class EvalPart {
 public:
  EvalPart(const Recipe& r, MetricsLog& metrics, Reporting reporting);
  bool on() const { return every_ > 0; }
  void at_start(Trainer& t);
  void after_step(Trainer& t);
  double last() const { return last_; }

 private:
  void run(Trainer& t);
  int every_, steps_;
  MetricsLog& metrics_;
  Reporting reporting_;
  double last_ = 0;
};

// A generated sample every log.sample_every steps and at the end.
class SamplePart {
 public:
  SamplePart(const Recipe& r, MetricsLog& metrics, Reporting reporting);
  void after_step(Trainer& t);

 private:
  const Recipe& recipe_;
  MetricsLog& metrics_;
  Reporting reporting_;
  std::unique_ptr<Tokenizer> tokenizer_;  // made at the first sample
};

// The data.stages entry the next step draws from, said when it changes.
class DataStagePart {
 public:
  DataStagePart(const Recipe& r, MetricsLog& metrics, Reporting reporting);
  void before_step(Trainer& t);

 private:
  const Recipe& recipe_;
  MetricsLog& metrics_;
  Reporting reporting_;
  int stage_ = -1;
};

// Why the run stops after this step.
enum class StopReason : uint8_t { none, stop_at, signal };

// Agrees on every rank whether to stop after a step: a signal any rank caught, or --stop-at.
class StopPart {
 public:
  // preemption: made before the trainer, so a signal during start-up is caught too.
  StopPart(Comm& world, const PreemptionGuard& preemption, int64_t stop_at, int64_t steps)
      : world_(world), preemption_(preemption), stop_at_(stop_at), steps_(steps) {}
  StopReason after_step(int64_t step);
  // The line that says why the run stopped (rank with Reporting::on).
  void report(int64_t step, bool saved, Reporting reporting) const;

 private:
  Comm& world_;
  const PreemptionGuard& preemption_;
  int64_t stop_at_, steps_;
  int32_t signal_ = 0;  // the largest signal number any rank caught
  StopReason reason_ = StopReason::none;
};

// Saves: every checkpoint.every steps, at the end and before a stop; remembers the newest (where
// a rollback returns to).
class SavePart {
 public:
  SavePart(const Recipe& r, std::string run, std::string resumed, MetricsLog& metrics, Reporting reporting);
  bool on() const { return on_; }
  void after_step(Trainer& t, const StepResult& last, StopReason stop);
  const std::string& newest() const { return newest_; }

 private:
  bool on_;
  int every_;
  int64_t steps_;
  std::string run_, newest_;
  MetricsLog& metrics_;
  Reporting reporting_;
};

// The summary line at the end of a run that trained to train.steps (collective: peak RSS).
void report_run_end(Trainer& t, const ProgressPart& progress, const EvalPart& eval, const StepResult& last,
                    Comm& world, Reporting reporting);

}  // namespace trainer
