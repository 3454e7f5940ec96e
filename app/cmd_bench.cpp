// trainer bench RECIPE [--set k=v]... [--steps N] [--warmup N] [--data synthetic|recipe] [--json]
// Runs warm-up steps, then timed steps of the real training step (no checkpoints, no
// evaluation) and reports tokens/s (global and per rank), MFU, the step time split into
// forward, backward, optimizer, communication (finishing the data-parallel gradient reductions,
// the tied-embedding sum and the grad-norm all-reduce) and pipeline bubble (waiting on
// stage-to-stage messages), and peak memory per rank. Tensor-parallel collectives run inside
// forward and backward and are counted there. Times are the mean over timed steps of the
// slowest rank. With --data synthetic (the default) tokens come from the counter-based
// generator, so no dataset is needed.
#include <fmt/core.h>

#include <algorithm>
#include <memory>

#include "app/commands.h"
#include "app/flops.h"
#include "app/metrics.h"
#include "app/recipe.h"
#include "app/run_report.h"
#include "app/trainer.h"
#include "kernels/errors.h"
#include "parallel/mpi_runtime.h"

namespace trainer {

namespace {

struct BenchOptions {
  std::string recipe;
  std::vector<std::string> overrides;
  int steps = 10;
  int warmup = 2;
  std::string data = "synthetic";
  bool json = false;
};

int run_bench(const BenchOptions& o) {
  if (o.data != "synthetic" && o.data != "recipe")
    throw ConfigError("--data " + o.data + ": valid: synthetic, recipe");
  if (o.steps < 1 || o.warmup < 0) throw ConfigError("--steps must be >= 1 and --warmup >= 0");
  Recipe recipe = load_recipe(o.recipe, o.overrides);
  recipe.eval.every = 0;
  recipe.checkpoint.dir.clear();
  recipe.train.steps = std::max(recipe.train.steps, o.steps + o.warmup);
  MpiRuntime mpi(recipe.parallel.timeout_s);
  const bool rank0 = mpi.world().rank() == 0;
  Trainer t(recipe, mpi.world(), mpi.local_rank(), o.data == "recipe" ? DataNeed::train : DataNeed::none);
  t.set_sync_timing(true);
  if (!o.json) print_run_report(t, rank0);
  else print_run_report(t, false);

  for (int i = 0; i < o.warmup; ++i) t.train_step();
  // sums: total, forward, backward, optimizer, comm, bubble
  double sums[6] = {0, 0, 0, 0, 0, 0};
  double last_loss = 0;
  for (int i = 0; i < o.steps; ++i) {
    StepResult r = t.train_step();
    sums[0] += r.times.total_s;
    sums[1] += r.times.forward_s;
    sums[2] += r.times.backward_s;
    sums[3] += r.times.optimizer_s;
    sums[4] += r.times.grad_sync_s;
    sums[5] += r.times.pipeline_wait_s;
    last_loss = r.loss;
  }
  float red[8];
  for (int i = 0; i < 6; ++i) red[i] = float(sums[i] / o.steps);
  red[6] = float(peak_rss_bytes());
  red[7] = float(t.memory().total());
  mpi.world().all_reduce(make_tensor(red, DType::f32, Device::cpu, {8}), ReduceOp::max);
  int64_t device_peak = int64_t(t.backend().peak_allocated_bytes());
  float dev[1] = {float(device_peak)};
  mpi.world().all_reduce(make_tensor(dev, DType::f32, Device::cpu, {1}), ReduceOp::max);

  const double step_s = red[0];
  const double tok_s = double(t.tokens_per_step()) / step_s;
  const int world = recipe.world();
  const bool bf16 = t.backend().act_dtype() == DType::bf16;
  const double peak = peak_flops(t.backend().name(), bf16, recipe.train.peak_tflops);
  const double fpt = flops_per_token(t.config(), recipe.train.seq_len);
  const double mfu = fpt * tok_s / (peak * world);
  const bool cuda = t.backend().device() == Device::cuda;
  const double peak_mem = cuda ? double(dev[0]) : double(red[6]);
  if (!rank0) return 0;
  const ParallelConfig& p = recipe.parallel;
  if (o.json) {
    fmt::print(
        "{{\"tokens_per_s\": {:.6g}, \"tokens_per_s_per_rank\": {:.6g}, \"mfu\": {:.6g}, \"step_s\": {:.6g}, "
        "\"forward_s\": {:.6g}, \"backward_s\": {:.6g}, \"optimizer_s\": {:.6g}, \"comm_s\": {:.6g}, "
        "\"bubble_s\": {:.6g}, \"peak_memory_bytes\": {:.0f}, \"planned_memory_bytes\": {:.0f}, "
        "\"world\": {}, \"data\": {}, \"tensor\": {}, \"pipeline\": {}, \"zero\": {}, \"schedule\": \"{}\", "
        "\"micro_batch\": {}, \"global_batch\": {}, \"seq_len\": {}, \"device\": \"{}\", \"precision\": \"{}\", "
        "\"flops_per_token\": {:.6g}, \"peak_flops_per_rank\": {:.6g}, \"steps\": {}, \"warmup\": {}, "
        "\"loss\": {:.6g}}}\n",
        tok_s, tok_s / world, mfu, step_s, red[1], red[2], red[3], red[4], red[5], peak_mem, double(red[7]), world,
        p.data, p.tensor, p.pipeline, p.zero, schedule_name(p.schedule), recipe.train.micro_batch,
        recipe.train.global_batch, recipe.train.seq_len, t.backend().name(), bf16 ? "bf16" : "fp32", fpt, peak,
        o.steps, o.warmup, last_loss);
  } else {
    fmt::print("bench: {} timed steps after {} warm-up, {} tokens per step\n", o.steps, o.warmup, t.tokens_per_step());
    fmt::print("  tokens/s     {:.1f} ({:.1f} per rank), MFU {:.1f}% of {:.3g} TFLOP/s per rank\n", tok_s,
               tok_s / world, 100 * mfu, peak / 1e12);
    fmt::print("  step         {:.4f} s = forward {:.4f} + backward {:.4f} + optimizer {:.4f} + comm {:.4f} + "
               "bubble {:.4f} (slowest rank each)\n",
               step_s, red[1], red[2], red[3], red[4], red[5]);
    fmt::print("  peak memory  {} per rank ({}; planned {})\n", format_bytes(int64_t(peak_mem)),
               cuda ? "device allocations" : "resident set", format_bytes(int64_t(red[7])));
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, CommandList& commands) {
  auto o = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "Measure tokens/s, MFU, step-time breakdown and peak memory of a recipe's "
                                          "training step (run under mpirun/srun for several ranks)");
  sub->add_option("recipe", o->recipe, "Recipe file (YAML)")->required();
  sub->add_option("--set", o->overrides, "Override a recipe key, e.g. --set parallel.data=2 (repeatable)");
  sub->add_option("--steps", o->steps, "Timed steps")->capture_default_str();
  sub->add_option("--warmup", o->warmup, "Untimed warm-up steps")->capture_default_str();
  sub->add_option("--data", o->data, "synthetic (generated tokens, no dataset needed) or recipe (data.train)")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "Print one JSON object instead of the report (for scripts)");
  commands.push_back({sub, [o]() { return run_bench(*o); }});
}

}  // namespace trainer
