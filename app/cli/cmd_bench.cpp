// trainer bench RECIPE [--set k=v]... [--steps N] [--warmup N] [--data synthetic|recipe] [--json]
//               [--profile [--ceilings datasheet|measured] [--bandwidth GB/s]]
// Runs warm-up steps, then timed steps of the real training step (no checkpoints, no
// evaluation) and reports tokens/s (global and per rank), MFU, the step time split into
// forward, backward, optimizer, communication (finishing the data-parallel gradient reductions,
// the tied-embedding sum and the grad-norm all-reduce) and pipeline bubble (waiting on
// stage-to-stage messages), and peak memory per rank. Tensor-parallel collectives run inside
// forward and backward and are counted there. Times are the mean over timed steps of the
// slowest rank. With --data synthetic (the default) tokens come from the counter-based
// generator, so no dataset is needed.
// MFU divides by the device's own peak (flops.h: looked up by the GPU's name and the precision;
// "n/a" / null for a GPU the table does not know). Device memory is reported twice: the peak of
// our own allocations and what the device says is in use (CUDA context and library workspaces
// included). --profile times every Backend op of the timed steps (OpProfiler: CUDA events
// on the GPU, a clock on the CPU) and prints rank 0's table, op by op, per step, with the
// rates its time gives for the bytes each op's arguments hold and the useful FLOPs it computes
// (OpCost), and each op's roofline floor where the device's bandwidth and peak are known
// (bench_profile.h; --ceilings measured reads them against what the device itself reached,
// --bandwidth sets the bandwidth for a GPU flops.h does not know, or a CPU). MFU always divides
// by the data sheet's peak.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "app/cli/bench_profile.h"
#include "app/cli/commands.h"
#include "app/engine/auto_bench.h"
#include "app/engine/auto_layout.h"
#include "app/plan/flops.h"
#include "app/engine/metrics.h"
#include "app/engine/options_from.h"
#include "app/engine/recipe_agreement.h"
#include "app/engine/run_report.h"
#include "app/engine/trainer.h"
#include "app/recipe/recipe.h"
#include "kernels/base/errors.h"
#include "parallel/mpi_runtime.h"

namespace trainer {

namespace {

// --data: where the tokens come from.
enum class BenchData : uint8_t { synthetic, recipe };
constexpr EnumName<BenchData> kBenchDataNames[] = {{BenchData::synthetic, "synthetic"},
                                                   {BenchData::recipe, "recipe"}};

struct BenchOptions {
  std::string recipe;
  std::vector<std::string> overrides;
  int steps = 10;
  int warmup = 2;
  std::string data = enum_name(kBenchDataNames, BenchData::synthetic);
  bool json = false;
  bool profile = false;
  double bandwidth_gbs = 0;  // --bandwidth, when given; else --ceilings' (flops.h)
  std::string ceilings = enum_name(kCeilingsNames, Ceilings::datasheet);
  const CLI::Option* bandwidth_option = nullptr;
  const CLI::Option* ceilings_option = nullptr;
  bool bandwidth_given() const { return bandwidth_option && bandwidth_option->count() > 0; }
  bool ceilings_given() const { return ceilings_option && ceilings_option->count() > 0; }
};

// Device names come from the driver or /proc/cpuinfo: escape what JSON cannot hold raw.
std::string json_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    out += ch;
  }
  return out;
}

// train.graphs: step's counts over warm-up and timed steps, null without it.
std::string graphs_json(const StepGraphRunner* g) {
  if (!g) return "null";
  return fmt::format("{{\"eager\": {}, \"captures\": {}, \"replays\": {}, \"max_nodes\": {}}}", g->eager_runs(),
                     g->captures(), g->replays(), g->max_nodes());
}

int bench_under_mpi(const BenchOptions& o, BenchData data, const Recipe& recipe, MpiRuntime& mpi);

int run_bench(const BenchOptions& o) {
  const std::optional<BenchData> data = enum_from_name(kBenchDataNames, o.data);
  if (!data) throw ConfigError("--data " + o.data + ": valid: " + enum_choices(kBenchDataNames));
  if (o.steps < 1 || o.warmup < 0) throw ConfigError("--steps must be >= 1 and --warmup >= 0");
  if (o.bandwidth_given() && !(o.bandwidth_gbs > 0))
    throw ConfigError(fmt::format("--bandwidth {}: the device memory bandwidth must be > 0 GB/s", o.bandwidth_gbs));
  if (o.bandwidth_given() && !o.profile)
    throw ConfigError(fmt::format("--bandwidth {}: it sets the roofline of --profile's table; add --profile",
                                  o.bandwidth_gbs));
  if (!enum_from_name(kCeilingsNames, o.ceilings))
    throw ConfigError("--ceilings " + o.ceilings + ": valid: " + enum_choices(kCeilingsNames));
  if (o.ceilings_given() && !o.profile)
    throw ConfigError("--ceilings " + o.ceilings + ": it sets the roofline of --profile's table; add --profile");
  Recipe recipe = load_recipe(o.recipe, o.overrides);
  recipe.eval.every = 0;
  recipe.checkpoint.dir.clear();
  recipe.train.steps = std::max(recipe.train.steps, o.steps + o.warmup);
  MpiRuntime mpi(recipe.parallel.timeout_s);
  return mpi.run([&] { return bench_under_mpi(o, *data, recipe, mpi); });
}

int bench_under_mpi(const BenchOptions& o, BenchData data, const Recipe& given, MpiRuntime& mpi) {
  check_recipe_agreement(given, mpi.world());
  std::vector<std::string> auto_report;
  const Recipe recipe = resolve_auto_layout(given, mpi.world().size(), &auto_report, [&](const Recipe& candidate) {
    return time_layout_on_job(candidate, mpi.world(), mpi.local_rank());
  });
  const bool rank0 = mpi.world().rank() == 0;
  if (rank0 && !o.json)
    for (const std::string& line : auto_report) fmt::print("{}\n", line);
  Trainer t(recipe, mpi.world(), mpi.local_rank(), data == BenchData::recipe ? DataNeed::train : DataNeed::none,
            o.profile ? OpProfile::on : OpProfile::off);
  t.set_sync_timing(true);
  mpi.set_rank_label(rank_label(mpi.world().rank(), t.grid().coords()));
  print_run_report(t, mpi, rank0 && !o.json ? Reporting::on : Reporting::off);
  // Before any step, so that a --ceilings the device has no figures for costs no run.
  const RooflineChoice roof = roofline_for(t.backend().device(), t.backend().device_name(), t.backend().act_dtype(),
                                           *enum_from_name(kCeilingsNames, o.ceilings),
                                           o.bandwidth_given() ? o.bandwidth_gbs * 1e9 : 0.0, recipe.train.peak_tflops);

  for (int i = 0; i < o.warmup; ++i) {
    t.train_step();
    t.trace_after_step();
  }
  if (t.profiler()) t.profiler()->clear();
  // sums: total, forward, backward, optimizer, comm, bubble, forward+backward
  double sums[7] = {0, 0, 0, 0, 0, 0, 0};
  double last_loss = 0;
  for (int i = 0; i < o.steps; ++i) {
    StepResult r = t.train_step();
    sums[0] += r.times.total_s;
    sums[1] += r.times.forward_s;
    sums[2] += r.times.backward_s;
    sums[3] += r.times.optimizer_s;
    sums[4] += r.times.grad_sync_s;
    sums[5] += r.times.pipeline_wait_s;
    sums[6] += r.times.forward_s + r.times.backward_s;
    last_loss = r.loss;
    if (t.profiler()) t.profiler()->collect();
    t.trace_after_step();
  }
  t.finish_trace();
  // Every rank's own bubble, for comparing with a trace's idle gaps stage by stage.
  std::vector<float> bubbles(size_t(mpi.world().size()));
  float my_bubble = float(sums[5] / o.steps);
  mpi.world().all_gather(make_tensor(bubbles.data(), DType::f32, Device::cpu, {int64_t(bubbles.size())}),
                         make_tensor(&my_bubble, DType::f32, Device::cpu, {1}));
  float red[9];
  for (int i = 0; i < 7; ++i) red[i] = float(sums[i] / o.steps);
  red[7] = float(peak_rss_bytes());
  red[8] = float(t.memory().total());
  mpi.world().all_reduce(make_tensor(red, DType::f32, Device::cpu, {9}), ReduceOp::max);
  const int64_t alloc_peak = int64_t(t.backend().peak_allocated_bytes());
  float dev[1] = {float(alloc_peak)};
  mpi.world().all_reduce(make_tensor(dev, DType::f32, Device::cpu, {1}), ReduceOp::max);

  const double step_s = red[0];
  const double tok_s = double(t.tokens_per_step()) / step_s;
  const int world = recipe.world();
  Backend& backend = t.backend();
  const Precision precision = backend.act_dtype() == DType::bf16 ? Precision::bf16 : Precision::fp32;
  const DevicePeak peak = device_peak(backend.device(), backend.device_name(), backend.act_dtype(), recipe.train.peak_tflops);
  const double fpt = flops_per_token(t.config(), recipe.train.seq_len);
  const double mfu = mfu_of(fpt * tok_s / world, peak);
  const bool cuda = backend.device() == Device::cuda;
  const double peak_mem = cuda ? double(dev[0]) : double(red[7]);
  // What the device itself says is in use (on rank 0's device).
  const DeviceMemory dm = backend.device_memory();
  if (!rank0) return 0;
  const std::string mfu_json = mfu >= 0 ? fmt::format("{:.6g}", mfu) : "null";
  const ParallelConfig& p = recipe.parallel;
  // The bubble as measured (each rank's wait on stage-to-stage messages, averaged over the
  // ranks, per step) next to the schedule model's idle fraction of an ideal pipeline.
  double bubble_mean = 0;
  for (float b : bubbles) bubble_mean += double(b) / double(bubbles.size());
  const double bubble_measured = step_s > 0 ? bubble_mean / step_s : 0.0;
  const double bubble_model = p.pipelined() ? bubble_fraction(pipe_shape_from(recipe)) : 0.0;
  // Replayed graphs run forward and backward as one: no split to report (null), only their sum.
  const bool graphs = t.step_graphs() != nullptr;
  const auto pass_json = [&](float seconds) { return graphs ? std::string("null") : fmt::format("{:.6g}", seconds); };
  if (o.json) {
    fmt::print(
        "{{\"tokens_per_s\": {:.6g}, \"tokens_per_s_per_rank\": {:.6g}, \"mfu\": {}, \"step_s\": {:.6g}, "
        "\"forward_s\": {}, \"backward_s\": {}, \"forward_backward_s\": {:.6g}, \"optimizer_s\": {:.6g}, \"comm_s\": {:.6g}, "
        "\"bubble_s\": {:.6g}, \"bubble_s_per_rank\": [{:.6g}], \"peak_memory_bytes\": {:.0f}, \"planned_memory_bytes\": {:.0f}, "
        "\"bubble_fraction\": {:.6g}, \"bubble_fraction_model\": {:.6g}, "
        "\"world\": {}, \"data\": {}, \"tensor\": {}, \"pipeline\": {}, \"zero\": {}, \"schedule\": \"{}\", "
        "\"virtual_stages\": {}, "
        "\"micro_batch\": {}, \"global_batch\": {}, \"seq_len\": {}, \"device\": \"{}\", \"precision\": \"{}\", "
        "\"flops_per_token\": {:.6g}, \"peak_flops_per_rank\": {:.6g}, \"steps\": {}, \"warmup\": {}, "
        "\"loss\": {:.6g}, \"device_name\": \"{}\", \"peak_kind\": \"{}\", \"device_memory_used_bytes\": {}, "
        "\"device_memory_total_bytes\": {}, \"startup_s\": {:.6g}, \"init_params_s\": {:.6g}, "
        "\"memory_bandwidth_bytes_per_s\": {}, \"roofline\": {}, \"graphs\": {}, \"profile\": {}}}\n",
        tok_s, tok_s / world, mfu_json, step_s, pass_json(red[1]), pass_json(red[2]), red[6], red[3], red[4], red[5],
        fmt::join(bubbles, ", "), peak_mem, double(red[8]),
        bubble_measured, bubble_model, world, p.data, p.tensor, p.pipeline, p.zero, schedule_name(p.schedule),
        p.virtual_stages, recipe.train.micro_batch,
        recipe.train.global_batch, recipe.train.seq_len, backend.name(), precision_name(precision), fpt, peak.flops,
        o.steps, o.warmup, last_loss, json_escape(backend.device_name()), peak_kind_name(peak.kind), dm.used_bytes(),
        dm.total_bytes, t.startup_seconds().total, t.startup_seconds().params,
        roof.roof.bytes_per_s > 0 ? fmt::format("{:.6g}", roof.roof.bytes_per_s) : "null",
        roof.roof.known() ? "\"" + roof.describe() + "\"" : "null", graphs_json(t.step_graphs()),
        t.profiler() ? profile_json(t.profiler()->rows(), o.steps, roof.roof) : "null");
  } else {
    fmt::print("bench: {} timed steps after {} warm-up, {} tokens per step\n", o.steps, o.warmup, t.tokens_per_step());
    fmt::print("  tokens/s     {:.1f} ({:.1f} per rank), MFU {} of {} per rank\n", tok_s, tok_s / world,
               mfu >= 0 ? fmt::format("{:.1f}%", 100 * mfu) : "n/a", peak.describe());
    if (const StepGraphRunner* g = t.step_graphs())
      fmt::print("  step         {:.4f} s = forward+backward {:.4f} (graph replays) + optimizer {:.4f} + comm {:.4f} "
                 "(slowest rank each)\n  graphs       {}\n",
                 step_s, red[6], red[3], red[4], graphs_text(*g));
    else
      fmt::print("  step         {:.4f} s = forward {:.4f} + backward {:.4f} + optimizer {:.4f} + comm {:.4f} + "
                 "bubble {:.4f} (slowest rank each)\n",
                 step_s, red[1], red[2], red[3], red[4], red[5]);
    if (p.pipelined())
      fmt::print("  pipeline     {}{}: waiting {:.1f}% of the step (mean over ranks); an ideal pipeline idles {:.1f}%\n",
                 schedule_name(p.schedule),
                 p.interleaved() ? fmt::format(" over {} virtual stages", p.virtual_stages) : "",
                 100 * bubble_measured, 100 * bubble_model);
    fmt::print("  peak memory  {} per rank ({}; planned {})\n", format_bytes(int64_t(peak_mem)),
               cuda ? "device allocations" : "resident set", format_bytes(int64_t(red[8])));
    fmt::print("  device       {}: {} of {} in use as the device reports it\n", backend.device_name(),
               format_bytes(dm.used_bytes()), format_bytes(dm.total_bytes));
    if (t.profiler()) {
      const std::string why = roof.roof.bytes_per_s > 0
                                  ? peak.describe()
                                  : fmt::format("no memory bandwidth is known for {} (--bandwidth GB/s sets one)",
                                                backend.device_name());
      print_profile(t.profiler()->rows(), o.steps, step_s, roof, why);
    }
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
  sub->add_option("--data", o->data,
                  fmt::format("{} (generated tokens, no dataset needed) or {} (data.train)",
                              enum_name(kBenchDataNames, BenchData::synthetic),
                              enum_name(kBenchDataNames, BenchData::recipe)))
      ->capture_default_str();
  sub->add_flag("--json", o->json, "Print one JSON object instead of the report (for scripts)");
  sub->add_flag("--profile", o->profile, "Time every backend op (CUDA events / a clock) and print rank 0's table");
  o->ceilings_option = sub->add_option(
      "--ceilings", o->ceilings,
      "The figures --profile's roofline floors use: datasheet (the default) or measured (what a copy and a bf16 "
      "GEMM reached on the device; in bf16, an H200: 4.3 TB/s, 790 TFLOP/s; an H100 SXM: 3.0 TB/s, 798 TFLOP/s)");
  o->bandwidth_option = sub->add_option("--bandwidth", o->bandwidth_gbs,
                  "Device memory bandwidth in GB/s for --profile's roofline floors (default: --ceilings' for a "
                  "known GPU; none on a CPU)");
  commands.push_back({sub, [o]() { return run_bench(*o); }});
}

}  // namespace trainer
