// The training loop (see train_loop.h).
#include "app/engine/recipe_agreement.h"
#include "app/engine/train_loop.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_auto_layout.h"
#include "app/checkpoint/checkpoint_lineage.h"
#include "app/checkpoint/checkpoint_lock.h"
#include "app/checkpoint/checkpoint_resume.h"
#include "app/checkpoint/checkpoint_writer.h"
#include "app/engine/auto_bench.h"
#include "app/engine/auto_layout.h"
#include "app/engine/loop_parts.h"
#include "app/engine/metrics.h"
#include "app/engine/preemption.h"
#include "app/engine/run_report.h"
#include "app/engine/shard_tokenizer_check.h"
#include "app/engine/step_guard.h"
#include "app/engine/trainer.h"
#include "app/recipe/recipe_checks.h"
#include "app/recipe/recipe_schema.h"
#include "kernels/base/errors.h"
#include "data/tokenizer.h"
#include "parallel/mpi_runtime.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

// A fresh run in a folder that holds other runs' checkpoints keeps apart from them (see
// checkpoint_lineage.h) and says so.
void note_other_runs(const std::string& dir, const std::string& run) {
  std::vector<CkptSummary> others;
  for (const CkptSummary& c : list_complete_checkpoints(dir))
    if (c.run != run) others.push_back(c);
  if (others.empty()) return;
  fmt::print("checkpoint: note: {} holds {} checkpoint{} of other runs (newest {}); this run ({}) prunes only its own "
             "and `latest` follows it\n",
             dir, others.size(), others.size() == 1 ? "" : "s", fs::path(others.front().dir).filename().string(), run);
}

// The recipe with its auto degrees resolved: kept from the checkpoint it resumes, else chosen
// (and, with parallel.auto_bench, timed on this job); what was chosen goes into *report.
Recipe resolve_layout(const Recipe& given, MpiRuntime& mpi, std::vector<std::string>* report) {
  const std::optional<KeptLayout> kept = auto_layout_from_checkpoint(given, mpi.world().size());
  if (!kept)
    return resolve_auto_layout(given, mpi.world().size(), report, [&](const Recipe& candidate) {
      return time_layout_on_job(candidate, mpi.world(), mpi.local_rank());
    });
  const ParallelConfig& p = kept->resolved.parallel;
  report->push_back(fmt::format("parallel: auto keeps data {} x tensor {} x pipeline {}, zero {} from {} (the "
                                "layout it chose before; another world size chooses anew)",
                                p.data, p.tensor, p.pipeline, p.zero, kept->checkpoint));
  return kept->resolved;
}

// Rank 0 holds checkpoint.dir's lock until the run ends; the directory is probed for writing.
std::unique_ptr<DirLock> take_checkpoint_dir(const Recipe& recipe, Comm& world) {
  if (recipe.checkpoint.dir.empty()) return nullptr;
  std::unique_ptr<DirLock> lock = lock_checkpoint_dir(recipe.checkpoint.dir, world);
  if (lock && !lock->stale_holder().empty())
    fmt::print("checkpoint: note: {} was left by {}, which ended without releasing it; taken over\n", lock->path(),
               lock->stale_holder());
  probe_checkpoint_dir(recipe.checkpoint.dir, world);
  return lock;
}

// Running a finished recipe again is common (a job script's retry, a second look), and so is
// rerunning a job whose --stop-at the checkpoint has reached; say so rather than print a done
// line with zero steps and a loss of zero, or train past the stop.
int nothing_to_train(Trainer& t, const Resumed& resumed, int64_t stop_at, Reporting reporting) {
  const int64_t steps = t.recipe().train.steps;
  const bool by_stop = stop_at > 0 && stop_at < steps;  // the limit that holds
  const int64_t limit = by_stop ? stop_at : steps;
  if (reporting == Reporting::on) {
    fmt::print("done: nothing to train: {} is at step {}, {} {} {}; to train on, {}; to start over, give another "
               "checkpoint.dir or checkpoint.resume: never\n",
               resumed.dir, t.step(), t.step() == limit ? "which is" : "past", by_stop ? "--stop-at" : "train.steps",
               limit, by_stop ? "raise --stop-at or leave it out" : "raise train.steps (--set train.steps=N)");
    std::fflush(stdout);
  }
  t.finish_trace();
  return 0;
}

// A resume under another learning-rate schedule (train.steps raised to train on is the common
// case: cosine and linear decay then stretch) moves the lr at once; say so, with both values at
// the step it continues from. A saved recipe that no longer loads says nothing here.
void note_schedule_change(const Resumed& resumed, const Recipe& recipe, int64_t step) {
  Recipe saved;
  try {
    saved = load_recipe_text(resumed.recipe_yaml, resumed.dir + "/manifest.yaml (recipe)", {});
  } catch (const UserError&) {
    return;
  }
  const LrSchedule was = lr_schedule_from(saved), now = lr_schedule_from(recipe);
  std::vector<std::string> changed;
  auto cmp = [&](const char* key, auto a, auto b) {
    if (a != b) changed.push_back(fmt::format("{} {} -> {}", key, a, b));
  };
  cmp("train.steps", was.total_steps, now.total_steps);
  cmp("train.optimizer.lr", was.max_lr, now.max_lr);
  cmp("train.lr_schedule.kind", lr_kind_name(was.kind), lr_kind_name(now.kind));
  cmp("train.lr_schedule.warmup_steps", was.warmup_steps, now.warmup_steps);
  cmp("train.lr_schedule.min_lr_ratio", was.min_lr_ratio, now.min_lr_ratio);
  if (was.kind == LrKind::wsd || now.kind == LrKind::wsd)
    cmp("train.lr_schedule.decay_fraction", was.decay_fraction, now.decay_fraction);
  if (changed.empty()) return;
  fmt::print("checkpoint: note: the learning-rate schedule differs from the checkpoint's ({}): at step {} its lr was "
             "{:.3e}, this run's is {:.3e}\n",
             fmt::join(changed, ", "), step, lr_at(was, step), lr_at(now, step));
}

int train_under_mpi(const Recipe& given, int64_t stop_at, MpiRuntime& mpi) {
  check_recipe_agreement(given, mpi.world());
  std::vector<std::string> auto_report;
  const Recipe recipe = resolve_layout(given, mpi, &auto_report);
  const Reporting reporting = mpi.world().rank() == 0 ? Reporting::on : Reporting::off;
  PreemptionGuard preemption;  // before anything slow, so a signal during start-up is caught
  const std::unique_ptr<DirLock> lock = take_checkpoint_dir(recipe, mpi.world());
  Trainer t(recipe, mpi.world(), mpi.local_rank());
  const std::vector<std::string> data_notes = check_shard_tokenizers(recipe);  // every rank: the same verdict
  mpi.set_rank_label(rank_label(mpi.world().rank(), t.grid().coords()));
  print_run_report(t, mpi, reporting);
  if (reporting == Reporting::on) {
    for (const std::string& line : auto_report) fmt::print("{}\n", line);
    for (const std::string& note : recipe_notes(given)) fmt::print("{}\n", note);
    for (const std::string& note : data_notes) fmt::print("{}\n", note);
  }
  const Resumed resumed = resume_from_checkpoint(t.checkpoint_parts(), reporting);
  if (!resumed.dir.empty()) t.set_step(resumed.step);
  if (!resumed.dir.empty() && reporting == Reporting::on) note_schedule_change(resumed, recipe, t.step());
  // Where the weights of a fresh start come from (a resume says so itself).
  if (resumed.dir.empty() && reporting == Reporting::on)
    fmt::print("model: {}\n", recipe.model.init_from.empty()
                                  ? fmt::format("random init (train.seed {})", recipe.train.seed)
                                  : "weights from model.init_from " + message_quote(recipe.model.init_from) +
                                        " (checked: shapes and finite values)");
  if (t.step() >= recipe.train.steps || (stop_at > 0 && t.step() >= stop_at))
    return nothing_to_train(t, resumed, stop_at, reporting);
  const std::string run = resumed.dir.empty() ? new_run_id(mpi.world()) : resumed.run;
  if (!recipe.checkpoint.dir.empty() && resumed.dir.empty() && reporting == Reporting::on)
    note_other_runs(recipe.checkpoint.dir, run);

  MetricsLog metrics(recipe.log.metrics, reporting);
  StepGuard guard(recipe, metrics, reporting, FaultInjector::from_environment());
  EvalPart eval(recipe, metrics, reporting);
  SamplePart sample(recipe, metrics, reporting);
  DataStagePart data_stage(recipe, metrics, reporting);
  StopPart stop(mpi.world(), preemption, stop_at, recipe.train.steps);
  SavePart save(recipe, run, resumed.dir, metrics, reporting);
  eval.at_start(t);
  ProgressPart progress(t, metrics, reporting);  // its clock starts after the first evaluation
  StepResult last{};
  while (t.step() < recipe.train.steps) {
    data_stage.before_step(t);
    const double step_t0 = monotonic_seconds();
    const StepOutcome outcome = guard.run_step(t, save.newest(), last);
    if (outcome == StepOutcome::stopped) {
      t.finish_trace();
      return kBadStepExitCode;
    }
    const double step_s = monotonic_seconds() - step_t0;
    progress.add_run_time(step_s);
    if (outcome == StepOutcome::rolled_back) {
      progress.restart_interval();
      continue;
    }
    progress.after_step(t, last, step_s);
    eval.after_step(t);
    sample.after_step(t);
    const StopReason why = stop.after_step(t.step());
    save.after_step(t, last, why);
    t.trace_after_step();
    if (why == StopReason::none) continue;
    t.finish_trace();
    stop.report(t.step(), save.on(), reporting);
    return 0;
  }
  report_run_end(t, progress, eval, last, mpi.world(), reporting);
  return 0;
}

}  // namespace

int run_training(const Recipe& recipe, int64_t stop_at) {
  MpiRuntime mpi(recipe.parallel.timeout_s);
  return mpi.run([&] { return train_under_mpi(recipe, stop_at, mpi); });
}

}  // namespace trainer
