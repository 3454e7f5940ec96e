// The training loop's parts (see loop_parts.h).
#include "app/engine/loop_parts.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdio>

#include "app/engine/run_report.h"
#include "app/engine/step_graphs.h"
#include "parallel/trace_recorder.h"

namespace trainer {

namespace {

// Every `every` steps and at the last one (every 0: never).
bool due(int64_t step, int64_t every, int64_t steps) { return every > 0 && (step % every == 0 || step == steps); }

void print_flushed(const std::string& text) {
  fmt::print("{}", text);
  std::fflush(stdout);
}

}  // namespace

ProgressPart::ProgressPart(Trainer& t, MetricsLog& metrics, Reporting reporting)
    : metrics_(metrics),
      reporting_(reporting),
      peak_(device_peak(t.backend().device(), t.backend().device_name(), t.backend().act_dtype(),
                        t.recipe().train.peak_tflops)),
      flops_tok_(flops_per_token(t.config(), t.recipe().train.seq_len)),
      t_begin_(monotonic_seconds()) {}

void ProgressPart::restart_interval() {
  interval_step_s_ = 0;
  interval_steps_ = 0;
}

void ProgressPart::after_step(const Trainer& t, const StepResult& last, double step_s) {
  interval_step_s_ += step_s;
  ++steps_done_;
  ++interval_steps_;
  const Recipe& r = t.recipe();
  const int64_t s = t.step(), steps = r.train.steps;
  if (!(s % r.log.every == 0 || s == 1 || s == steps)) return;
  const double dt = interval_step_s_ / double(interval_steps_);
  const double tok_s = double(t.tokens_per_step()) / dt;
  const double mfu = mfu_of(flops_tok_ * tok_s / double(r.world()), peak_);
  const std::string mfu_text = mfu >= 0 ? fmt::format("{:.1f}%", 100.0 * mfu) : "n/a";
  const double elapsed = monotonic_seconds() - t_begin_;
  const double eta = dt * double(steps - s);
  if (reporting_ == Reporting::on)
    print_flushed(fmt::format(
        "step {:>6}/{} | loss {:.4f} | lr {:.2e} | norm {:.4f} | {:.0f} tok/s | MFU {} | {:.3f} s/step | ETA {}\n", s,
        steps, last.loss, last.lr, last.grad_norm, tok_s, mfu_text, dt, format_duration(eta)));
  std::vector<std::pair<std::string, double>> record = {
      {"step", double(s)}, {"loss", last.loss}, {"lr", last.lr}, {"grad_norm", last.grad_norm}, {"tokens_per_s", tok_s}};
  if (mfu >= 0) record.push_back({"mfu", mfu});  // omitted when the device's peak is unknown
  record.push_back({"step_s", dt});
  record.push_back({"elapsed_s", elapsed});
  metrics_.write(record);
  restart_interval();
}

EvalPart::EvalPart(const Recipe& r, MetricsLog& metrics, Reporting reporting)
    : every_(r.eval.every), steps_(r.train.steps), metrics_(metrics), reporting_(reporting), last_(NAN) {}

void EvalPart::at_start(Trainer& t) {
  if (on() && t.step() == 0) run(t);
}

void EvalPart::after_step(Trainer& t) {
  if (due(t.step(), every_, steps_)) run(t);
}

// Timed apart: the progress line's step times and tokens/s count the steps alone.
void EvalPart::run(Trainer& t) {
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
  if (reporting_ == Reporting::on)
    print_flushed(fmt::format("step {:>6} | val loss {:.4f}{} | eval {:.2f} s\n", t.step(), val.mean, per_source, took));
  metrics_.write(fields);
  last_ = val.mean;
}

SamplePart::SamplePart(const Recipe& r, MetricsLog& metrics, Reporting reporting)
    : recipe_(r), metrics_(metrics), reporting_(reporting) {}

void SamplePart::after_step(Trainer& t) {
  if (!due(t.step(), recipe_.log.sample_every, recipe_.train.steps)) return;
  const double t0 = monotonic_seconds();
  {
    TraceScope span(t.tracer(), "sample", "sample", {TraceArg::num("tokens", recipe_.log.sample_tokens)});
    if (!tokenizer_) tokenizer_ = make_tokenizer(recipe_.data.tokenizer, recipe_.data.tokenizer_dir);
    std::vector<int32_t> prompt = tokenizer_->encode(recipe_.log.sample_prompt);
    if (prompt.empty()) prompt.push_back(tokenizer_->eot());
    GenerateOptions g;
    g.tokens = recipe_.log.sample_tokens;
    g.seed = recipe_.train.seed + uint64_t(t.step());
    const std::vector<int32_t> out = t.generate(prompt, g);
    if (reporting_ == Reporting::on) {
      std::vector<int32_t> generated(out.begin() + long(prompt.size()), out.end());
      for (auto& id : generated)
        if (id >= tokenizer_->vocab_size()) id = tokenizer_->eot();
      print_flushed(fmt::format("sample at step {}:\n{}{}\n---\n", t.step(), recipe_.log.sample_prompt,
                                tokenizer_->decode(generated)));
    }
  }
  metrics_.write({{"step", double(t.step())}, {"sample_s", monotonic_seconds() - t0}});
}

DataStagePart::DataStagePart(const Recipe& r, MetricsLog& metrics, Reporting reporting)
    : recipe_(r), metrics_(metrics), reporting_(reporting) {}

void DataStagePart::before_step(Trainer& t) {
  if (recipe_.data.stages.empty()) return;
  const int stage = t.train_loader()->stage_at(t.step() + 1);
  if (stage == stage_) return;
  stage_ = stage;
  const std::string mix = t.train_loader()->mix_text(stage);
  if (reporting_ == Reporting::on)
    print_flushed(
        fmt::format("step {:>6} | data stage {} of {}: {}\n", t.step() + 1, stage, recipe_.data.stages.size(), mix));
  metrics_.write({{"step", double(t.step() + 1)}, {"data_stage", double(stage)}}, {{"mix", mix}});
}

StopReason StopPart::after_step(int64_t step) {
  signal_ = preemption_.requested();
  world_.all_reduce(make_tensor(&signal_, DType::i32, Device::cpu, {1}), ReduceOp::max);
  // --stop-at names the step it stopped at even when a signal came too.
  if (stop_at_ > 0 && step >= stop_at_ && step < steps_) reason_ = StopReason::stop_at;
  else reason_ = signal_ != 0 ? StopReason::signal : StopReason::none;
  return reason_;
}

void StopPart::report(int64_t step, bool saved, Reporting reporting) const {
  if (reporting != Reporting::on) return;
  if (reason_ == StopReason::stop_at)
    print_flushed(fmt::format("stopping after step {} (--stop-at){}\n", step, saved ? "; checkpoint saved" : ""));
  else
    print_flushed(fmt::format("stopping after step {} on signal {} ({}); resume with the same command\n", step,
                              signal_, saved ? "checkpoint saved" : "no checkpoint.dir, nothing saved"));
}

SavePart::SavePart(const Recipe& r, std::string run, std::string resumed, MetricsLog& metrics, Reporting reporting)
    : on_(!r.checkpoint.dir.empty()),
      every_(r.checkpoint.every),
      steps_(r.train.steps),
      run_(std::move(run)),
      newest_(std::move(resumed)),
      metrics_(metrics),
      reporting_(reporting) {}

void SavePart::after_step(Trainer& t, const StepResult& last, StopReason stop) {
  const int64_t s = t.step();
  const bool periodic = every_ > 0 && s % every_ == 0;
  if (!on_ || !(periodic || s == steps_ || stop != StopReason::none)) return;
  const double t0 = monotonic_seconds();
  // A step whose gradient norm was not finite may have poisoned the weights it saved.
  const double loss = std::isfinite(last.grad_norm) ? last.loss : NAN;
  {
    TraceScope span(t.tracer(), "checkpoint", "checkpoint", {TraceArg::num("step", double(s))});
    newest_ = save_checkpoint(t.checkpoint_parts(), s, CkptRunInfo{run_, loss});
  }
  const double took = monotonic_seconds() - t0;
  if (reporting_ == Reporting::on) print_flushed(fmt::format("checkpoint: saved {} ({:.2f} s)\n", newest_, took));
  metrics_.write({{"step", double(s)}, {"checkpoint_s", took}});
}

void report_run_end(Trainer& t, const ProgressPart& progress, const EvalPart& eval, const StepResult& last,
                    Comm& world, Reporting reporting) {
  t.finish_trace();
  const double total = monotonic_seconds() - progress.began();
  float rss[1] = {float(peak_rss_bytes())};
  world.all_reduce(make_tensor(rss, DType::f32, Device::cpu, {1}), ReduceOp::max);
  if (reporting != Reporting::on) return;
  const double run_s = progress.run_step_s();
  std::string line = fmt::format("done: {} steps in {} ({:.0f} tok/s in steps), final loss {:.4f}",
                                 progress.steps_done(), format_duration(total),
                                 run_s > 0 ? double(progress.steps_done()) * double(t.tokens_per_step()) / run_s : 0.0,
                                 last.loss);
  if (eval.on()) line += fmt::format(", final val loss {:.4f}", eval.last());
  line += fmt::format(", peak resident memory per rank {}\n", format_bytes(int64_t(rss[0])));
  if (const StepGraphRunner* g = t.step_graphs()) line += fmt::format("train.graphs: step: {}\n", graphs_text(*g));
  print_flushed(line);
}

}  // namespace trainer
