// trainer plan RECIPE [--set k=v]... [--world N] [--device a100|h100|h200|cpu] [--memory GiB]
//                     [--mfu F] [--search [--top K] | --ops [--ceilings datasheet|measured]
//                     [--bandwidth GB/s]] [--json]
// Memory per rank and FLOPs for the recipe's layout, or (--search) every valid layout for the
// world size ranked by a step-time model, or (--ops) every op of the layout's step with its
// bytes, FLOPs and roofline floor on the device (the data sheet's ceilings, the measured ones
// or --bandwidth / train.peak_tflops: flops.h's roofline_for); no device, no MPI, no data. The precision follows
// the trainer's rule for the device: fp32 on the CPU; on a GPU bf16 unless train.precision is
// fp32. Errors are ConfigErrors (exit code 2).
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/cli_checks.h"
#include "app/cli/commands.h"
#include "app/engine/auto_layout.h"
#include "app/plan/flops.h"
#include "app/engine/options_from.h"
#include "app/plan/plan_device.h"
#include "app/plan/plan_report.h"
#include "app/recipe/recipe.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

struct PlanOptions {
  std::string recipe;
  std::vector<std::string> overrides;
  int world = 0;        // 0 = the recipe's data x tensor x pipeline
  std::string device;   // "" = the recipe's when it is cpu
  double memory_gib = 0;  // 0 = the device's
  double mfu = 0;         // 0 = the device's assumption
  bool search = false;
  bool ops = false;
  std::string ceilings = enum_name(kCeilingsNames, Ceilings::datasheet);
  double bandwidth_gbs = 0;
  const CLI::Option* ceilings_option = nullptr;
  const CLI::Option* bandwidth_option = nullptr;
  int top = 20;
  bool json = false;
};

PlanDevice resolve_device(const PlanOptions& opt, const Recipe& r) {
  if (!opt.device.empty()) return parse_plan_device(opt.device);
  if (r.train.device == DeviceChoice::cpu) return PlanDevice::cpu;
  throw ConfigError(fmt::format("{}: train.device is {}; tell plan which hardware to assume with --device {}", r.path,
                                device_choice_name(r.train.device), enum_choices(kPlanDeviceNames, ", ", " or ")));
}

int run_plan(const PlanOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  Recipe recipe = load_recipe(opt.recipe, opt.overrides);
  if (recipe.auto_layout() && opt.world == 0)
    throw ConfigError(fmt::format("{}: parallel has auto degrees, which are chosen for a world size; give --world N",
                                  opt.recipe));
  if (opt.search && opt.ops)
    throw ConfigError("--ops lists the ops of one layout's step; it does not combine with --search");
  const std::optional<Ceilings> ceilings = enum_from_name(kCeilingsNames, opt.ceilings);
  if (!ceilings) throw ConfigError("--ceilings " + opt.ceilings + ": valid: " + enum_choices(kCeilingsNames));
  const bool bandwidth_given = opt.bandwidth_option->count() > 0;
  if (bandwidth_given && !(opt.bandwidth_gbs > 0))
    throw ConfigError(fmt::format("--bandwidth {}: the device memory bandwidth must be > 0 GB/s", opt.bandwidth_gbs));
  for (const CLI::Option* o : {opt.ceilings_option, opt.bandwidth_option})
    if (o->count() > 0 && !opt.ops)
      throw ConfigError(fmt::format("{} {}: it sets the ceilings of --ops's floors; add --ops", o->get_name(),
                                    o->as<std::string>()));
  const int world = opt.world > 0 ? opt.world : recipe.world();
  const PlanDevice device = resolve_device(opt, recipe);
  PlanContext ctx = plan_context_for(recipe, world, device, opt.memory_gib, opt.mfu);
  ctx.recipe_path = opt.recipe;
  std::string auto_text;
  if (recipe.auto_layout() && !opt.search) {
    const AutoLayoutChoice choice = choose_auto_layout(recipe, world, ctx);
    for (const std::string& line : auto_layout_report(choice, ctx)) auto_text += line + "\n";
    recipe = choice.resolved;
  }

  std::string text;
  if (opt.search) {
    const SearchInput in = search_input_for(recipe, world, ctx);
    std::vector<PlanCandidate> ranked = search_layouts(in);
    if (ranked.empty())
      throw ConfigError(fmt::format("{}: no layout of {} ranks is valid for this model and train.global_batch {} "
                                    "(tensor must divide model.n_head {} and the padded vocabulary {}, pipeline be at "
                                    "most model.n_layer {}, data divide the global batch)",
                                    opt.recipe, world, recipe.train.global_batch, recipe.model.n_head,
                                    recipe.padded_vocab(), recipe.model.n_layer));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    text = opt.json ? format_search_json(ctx, ranked, world, recipe.train.recompute)
                    : format_search_text(ctx, ranked, opt.top, elapsed);
  } else if (opt.ops) {
    check_layout(recipe, world);
    const PlanLayout layout = plan_layout_from(recipe, ctx.device.device());
    const RooflineChoice roof =
        ops_roofline(ctx, *ceilings, bandwidth_given ? opt.bandwidth_gbs * 1e9 : 0.0, recipe.train.peak_tflops);
    const std::vector<PlanStageOps> stages = build_ops_report(ctx, layout, roof);
    text = opt.json ? format_ops_json(ctx, roof, stages) : auto_text + format_ops_text(ctx, layout, roof, stages);
  } else {
    check_layout(recipe, world);
    PlanReport report = build_plan_report(ctx, plan_layout_from(recipe, ctx.device.device()));
    text = opt.json ? format_plan_json(report) : auto_text + format_plan_text(report);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, CommandList& commands) {
  auto opt = std::make_shared<PlanOptions>();
  auto* sub = app.add_subcommand(
      "plan",
      "Memory per rank and FLOPs for a recipe's layout, or (--search) every valid layout ranked by a "
      "step-time model; needs no device, MPI or data");
  sub->add_option("recipe", opt->recipe, "recipe file (YAML); see configs/README.md")->required();
  sub->add_option("--set", opt->overrides, "override one key, section.key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--world", opt->world,
                  "number of ranks (default: the recipe's data x tensor x pipeline; without --search "
                  "it must equal that)")
      ->check(int_in(1, kMaxRanks));
  sub->add_option("--device", opt->device,
                  "hardware to assume: " + enum_choices(kPlanDeviceNames, ", ", " or ") +
                      " (the trainer's CPU path); default cpu when train.device is cpu");
  sub->add_option("--memory", opt->memory_gib,
                  "memory per rank in GiB (default: the device's; cpu: this machine's RAM / world)")
      ->check(finite_in(1e-6, 1e9));
  sub->add_option("--mfu", opt->mfu, "assumed fraction of peak FLOP/s that compute reaches (default 0.5)")
      ->check(CLI::Range(0.001, 1.0));
  sub->add_flag("--search", opt->search, "rank every valid layout of --world ranks");
  sub->add_flag("--ops", opt->ops,
                "every op of the layout's training step: bytes, FLOPs and the floor the device's bandwidth and "
                "peak give it");
  opt->ceilings_option = sub->add_option(
      "--ceilings", opt->ceilings,
      "the figures --ops reads against: datasheet (the default; MFU's peak) or measured (what a copy and a bf16 "
      "GEMM reached on the device; in bf16, an H200: 4.3 TB/s, 790 TFLOP/s; an H100 SXM: 3.0 TB/s, 798 TFLOP/s)");
  opt->bandwidth_option = sub->add_option("--bandwidth", opt->bandwidth_gbs,
                                          "device memory bandwidth in GB/s for --ops's floors (default: --ceilings')");
  sub->add_option("--top", opt->top, "layouts --search prints (default 20)")->check(int_in(1, int64_t(1) << 30));
  sub->add_flag("--json", opt->json, "print one JSON object (with --search: every layout)");
  commands.push_back({sub, [opt]() { return run_plan(*opt); }});
}

}  // namespace trainer
