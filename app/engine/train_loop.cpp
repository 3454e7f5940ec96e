// The training loop (see train_loop.h).
#include "app/engine/recipe_agreement.h"
#include "app/engine/train_loop.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include "app/checkpoint/checkpoint_auto_layout.h"
#include "app/checkpoint/checkpoint_lineage.h"
#include "app/checkpoint/checkpoint_lock.h"
#include "app/checkpoint/checkpoint_resume.h"
#include "app/checkpoint/checkpoint_writer.h"
#include "app/engine/auto_bench.h"
#include "app/engine/auto_layout.h"
#include "app/engine/flops.h"
#include "app/engine/metrics.h"
#include "app/engine/preemption.h"
#include "app/engine/run_report.h"
#include "app/engine/step_guard.h"
#include "app/engine/trainer.h"
#include "app/recipe/recipe_checks.h"
#include "data/tokenizer.h"
#include "parallel/mpi_runtime.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

class Sampler {
 public:
  explicit Sampler(const Recipe& r) : recipe_(r) {}
  void sample(Trainer& t, Reporting reporting) {
    if (!tokenizer_) tokenizer_ = make_tokenizer(recipe_.data.tokenizer, recipe_.data.tokenizer_dir);
    std::vector<int32_t> prompt = tokenizer_->encode(recipe_.log.sample_prompt);
    if (prompt.empty()) prompt.push_back(tokenizer_->eot());
    GenerateOptions g;
    g.tokens = recipe_.log.sample_tokens;
    g.seed = recipe_.train.seed + uint64_t(t.step());
    std::vector<int32_t> out = t.generate(prompt, g);
    if (reporting == Reporting::off) return;
    std::vector<int32_t> generated(out.begin() + long(prompt.size()), out.end());
    for (auto& id : generated)
      if (id >= tokenizer_->vocab_size()) id = tokenizer_->eot();
    fmt::print("sample at step {}:\n{}{}\n---\n", t.step(), recipe_.log.sample_prompt, tokenizer_->decode(generated));
    std::fflush(stdout);
  }

 private:
  const Recipe& recipe_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

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

int train_under_mpi(const Recipe& given, int64_t stop_at, MpiRuntime& mpi) {
  check_recipe_agreement(given, mpi.world());
  std::vector<std::string> auto_report;
  const std::optional<KeptLayout> kept = auto_layout_from_checkpoint(given, mpi.world().size());
  if (kept) {
    const ParallelConfig& p = kept->resolved.parallel;
    auto_report.push_back(fmt::format("parallel: auto keeps data {} x tensor {} x pipeline {}, zero {} from {} (the "
                                      "layout it chose before; another world size chooses anew)",
                                      p.data, p.tensor, p.pipeline, p.zero, kept->checkpoint));
  }
  const Recipe recipe = kept ? kept->resolved
                             : resolve_auto_layout(given, mpi.world().size(), &auto_report, [&](const Recipe& candidate) {
                                 return time_layout_on_job(candidate, mpi.world(), mpi.local_rank());
                               });
  const bool rank0 = mpi.world().rank() == 0;
  const Reporting reporting = rank0 ? Reporting::on : Reporting::off;
  PreemptionGuard preemption;
  const bool checkpoints_on = !recipe.checkpoint.dir.empty();
  std::unique_ptr<CheckpointLock> lock;  // held by rank 0 until the run ends
  if (checkpoints_on) {
    lock = lock_checkpoint_dir(recipe.checkpoint.dir, mpi.world());
    if (lock && !lock->stale_holder().empty())
      fmt::print("checkpoint: note: {} was left by {}, which ended without releasing it; taken over\n", lock->path(),
                 lock->stale_holder());
    probe_checkpoint_dir(recipe.checkpoint.dir, mpi.world());
  }
  Trainer t(recipe, mpi.world(), mpi.local_rank());
  mpi.set_rank_label(rank_label(mpi.world().rank(), t.grid().coords()));
  print_run_report(t, mpi, reporting);
  if (rank0) {
    for (const std::string& line : auto_report) fmt::print("{}\n", line);
    for (const std::string& note : recipe_notes(given)) fmt::print("{}\n", note);
  }
  const Resumed resumed = resume_from_checkpoint(t, reporting);
  if (t.step() >= recipe.train.steps) {
    // Running a finished recipe again is common (a job script's retry, a second look); say so
    // rather than print a done line with zero steps and a loss of zero.
    if (rank0) {
      fmt::print("done: nothing to train: {} is at step {}, {} train.steps {}; to train on, raise train.steps "
                 "(--set train.steps=N); to start over, give another checkpoint.dir or checkpoint.resume: never\n",
                 resumed.dir, t.step(), t.step() == recipe.train.steps ? "which is" : "past", recipe.train.steps);
      std::fflush(stdout);
    }
    t.finish_trace();
    return 0;
  }
  const std::string run = resumed.dir.empty() ? new_run_id(mpi.world()) : resumed.run;
  if (checkpoints_on && resumed.dir.empty() && rank0) note_other_runs(recipe.checkpoint.dir, run);
  MetricsLog metrics(recipe.log.metrics, reporting);
  StepResult last{};
  std::string newest_checkpoint = resumed.dir;  // where a rollback returns to
  auto save = [&]() {
    const double t0 = monotonic_seconds();
    const double loss = std::isfinite(last.grad_norm) ? last.loss : NAN;
    {
      TraceScope span(t.tracer(), "checkpoint", "checkpoint", {TraceArg::num("step", double(t.step()))});
      newest_checkpoint = save_checkpoint(t, t.train_loader()->state(), CkptRunInfo{run, loss});
    }
    const double took = monotonic_seconds() - t0;
    if (rank0) {
      fmt::print("checkpoint: saved {} ({:.2f} s)\n", newest_checkpoint, took);
      std::fflush(stdout);
    }
    metrics.write({{"step", double(t.step())}, {"checkpoint_s", took}});
  };

  Sampler sampler(recipe);
  StepGuard guard(recipe, metrics, reporting, FaultInjector::from_environment());
  const DevicePeak peak =
      device_peak(t.backend().device(), t.backend().device_name(), t.backend().act_dtype(), recipe.train.peak_tflops);
  const double flops_tok = flops_per_token(t.config(), recipe.train.seq_len);
  const int steps = recipe.train.steps;
  const bool eval_on = recipe.eval.every > 0;

  // Evaluation, sampling and saves are timed apart: the step times and tokens/s of the
  // progress line count the steps alone.
  auto run_eval = [&]() {
    const double t0 = monotonic_seconds();
    const EvalResult val = t.evaluate();
    const double took = monotonic_seconds() - t0;
    std::string per_source;
    std::vector<std::pair<std::string, double>> fields = {{"step", double(t.step())}, {"val_loss", val.mean}};
    if (val.per_source.size() > 1)
      for (size_t k = 0; k < val.per_source.size(); ++k) {
        per_source += fmt::format("{}{} {:.4f}", k ? ", " : " (", val.names[k], val.per_source[k]);
        fields.push_back({"val_loss_" + val.names[k], val.per_source[k]});
      }
    if (!per_source.empty()) per_source += ")";
    fields.push_back({"eval_s", took});
    if (rank0) {
      fmt::print("step {:>6} | val loss {:.4f}{} | eval {:.2f} s\n", t.step(), val.mean, per_source, took);
      std::fflush(stdout);
    }
    metrics.write(fields);
    return val.mean;
  };
  auto run_sample = [&]() {
    const double t0 = monotonic_seconds();
    {
      TraceScope span(t.tracer(), "sample", "sample", {TraceArg::num("tokens", recipe.log.sample_tokens)});
      sampler.sample(t, reporting);
    }
    metrics.write({{"step", double(t.step())}, {"sample_s", monotonic_seconds() - t0}});
  };

  double last_val = NAN;
  if (eval_on && t.step() == 0) last_val = run_eval();

  const double t_begin = monotonic_seconds();
  double interval_step_s = 0;  // time spent in the interval's steps alone
  double run_step_s = 0;
  int64_t interval_steps = 0;
  int64_t steps_done = 0;
  int data_stage = -1;  // the data.stages entry the last step drew from
  auto note_data_stage = [&]() {
    if (recipe.data.stages.empty()) return;
    const int stage = t.train_loader()->stage_at(t.step() + 1);
    if (stage == data_stage) return;
    data_stage = stage;
    const std::string mix = t.train_loader()->mix_text(stage);
    if (rank0) {
      fmt::print("step {:>6} | data stage {} of {}: {}\n", t.step() + 1, stage, recipe.data.stages.size(), mix);
      std::fflush(stdout);
    }
    metrics.write({{"step", double(t.step() + 1)}, {"data_stage", double(stage)}}, {{"mix", mix}});
  };
  while (t.step() < steps) {
    note_data_stage();
    const double step_t0 = monotonic_seconds();
    const StepOutcome outcome = guard.run_step(t, newest_checkpoint, last);
    if (outcome == StepOutcome::stopped) {
      t.finish_trace();
      return kBadStepExitCode;
    }
    const double step_s = monotonic_seconds() - step_t0;
    run_step_s += step_s;
    if (outcome == StepOutcome::rolled_back) {
      interval_step_s = 0;
      interval_steps = 0;
      continue;
    }
    interval_step_s += step_s;
    ++steps_done;
    ++interval_steps;
    const int64_t s = t.step();
    if (s % recipe.log.every == 0 || s == 1 || s == steps) {
      double now = monotonic_seconds();
      double dt = interval_step_s / double(interval_steps);
      double tok_s = double(t.tokens_per_step()) / dt;
      const double mfu = mfu_of(flops_tok * tok_s / double(recipe.world()), peak);
      const std::string mfu_text = mfu >= 0 ? fmt::format("{:.1f}%", 100.0 * mfu) : "n/a";
      double elapsed = now - t_begin;
      double eta = dt * double(steps - s);
      if (rank0) {
        fmt::print("step {:>6}/{} | loss {:.4f} | lr {:.2e} | norm {:.4f} | {:.0f} tok/s | MFU {} | {:.3f} s/step | ETA {}\n",
                   s, steps, last.loss, last.lr, last.grad_norm, tok_s, mfu_text, dt, format_duration(eta));
        std::fflush(stdout);
      }
      std::vector<std::pair<std::string, double>> record = {
          {"step", double(s)}, {"loss", last.loss}, {"lr", last.lr}, {"grad_norm", last.grad_norm}, {"tokens_per_s", tok_s}};
      if (mfu >= 0) record.push_back({"mfu", mfu});  // omitted when the device's peak is unknown
      record.push_back({"step_s", dt});
      record.push_back({"elapsed_s", elapsed});
      metrics.write(record);
      interval_step_s = 0;
      interval_steps = 0;
    }
    if (eval_on && (s % recipe.eval.every == 0 || s == steps)) last_val = run_eval();
    if (recipe.log.sample_every > 0 && (s % recipe.log.sample_every == 0 || s == steps)) run_sample();
    int32_t signal = preemption.requested();
    mpi.world().all_reduce(make_tensor(&signal, DType::i32, Device::cpu, {1}), ReduceOp::max);
    const bool periodic = recipe.checkpoint.every > 0 && s % recipe.checkpoint.every == 0;
    const bool stopping = stop_at > 0 && s >= stop_at && s < steps;
    if (checkpoints_on && (periodic || s == steps || signal != 0 || stopping)) save();
    t.trace_after_step();
    if (stopping || signal != 0) t.finish_trace();
    if (stopping) {
      if (rank0) {
        fmt::print("stopping after step {} (--stop-at){}\n", s, checkpoints_on ? "; checkpoint saved" : "");
        std::fflush(stdout);
      }
      return 0;
    }
    if (signal != 0) {
      if (rank0) {
        fmt::print("stopping after step {} on signal {} ({}); resume with the same command\n", s, signal,
                   checkpoints_on ? "checkpoint saved" : "no checkpoint.dir, nothing saved");
        std::fflush(stdout);
      }
      return 0;
    }
  }

  t.finish_trace();
  const double total = monotonic_seconds() - t_begin;
  float rss[1] = {float(peak_rss_bytes())};
  mpi.world().all_reduce(make_tensor(rss, DType::f32, Device::cpu, {1}), ReduceOp::max);
  if (rank0) {
    fmt::print("done: {} steps in {} ({:.0f} tok/s in steps), final loss {:.4f}", steps_done, format_duration(total),
               run_step_s > 0 ? double(steps_done) * double(t.tokens_per_step()) / run_step_s : 0.0, last.loss);
    if (eval_on) fmt::print(", final val loss {:.4f}", last_val);
    fmt::print(", peak resident memory per rank {}\n", format_bytes(int64_t(rss[0])));
    if (const StepGraphRunner* g = t.step_graphs()) fmt::print("train.graphs: step: {}\n", graphs_text(*g));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int run_training(const Recipe& recipe, int64_t stop_at) {
  MpiRuntime mpi(recipe.parallel.timeout_s);
  return mpi.run([&] { return train_under_mpi(recipe, stop_at, mpi); });
}

}  // namespace trainer
