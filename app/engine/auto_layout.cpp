// parallel: auto (see auto_layout.h): the planner's ranked search, filtered to the layouts that
// keep the recipe's fixed choices and pass every recipe rule, first fitting one chosen.
#include "app/engine/auto_layout.h"

#include <fmt/core.h>

#include <algorithm>

#include "app/plan/flops.h"
#include "app/engine/options_from.h"
#include "app/engine/run_report.h"
#include "app/recipe/recipe_checks.h"
#include "kernels/backend_options.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

bool keeps(int recipe_value, int candidate_value) {
  return recipe_value == kAutoDegree || recipe_value == candidate_value;
}

Recipe with_layout(const Recipe& recipe, const PlanLayout& l) {
  Recipe r = recipe;
  r.parallel.data = l.data;
  r.parallel.tensor = l.tensor;
  r.parallel.pipeline = l.pipeline;
  r.parallel.zero = l.zero;
  return r;
}

// The first recipe rule the resolved recipe breaks ("" when none): llama's k/v heads and SwiGLU
// width, the evaluation split, ... beyond what the search enumerates by.
std::string broken_rule(const Recipe& r) {
  KeyOrigins origins;
  origins.file = r.path;
  try {
    check_recipe(r, origins);
    return "";
  } catch (const ConfigError& e) {
    return e.what();
  }
}

std::string layout_text(const PlanLayout& l) {
  return fmt::format("data {} x tensor {} x pipeline {}, zero {}", l.data, l.tensor, l.pipeline, l.zero);
}

std::string auto_keys_text(const Recipe& r) {
  std::string out;
  const std::pair<const char*, int> keys[] = {{"data", r.parallel.data},
                                              {"tensor", r.parallel.tensor},
                                              {"pipeline", r.parallel.pipeline},
                                              {"zero", r.parallel.zero}};
  for (const auto& key : keys)
    if (key.second == kAutoDegree) out += (out.empty() ? "parallel." : ", parallel.") + std::string(key.first);
  return out;
}

}  // namespace

PlanContext plan_context_for(const Recipe& recipe, int world, PlanDevice device, double memory_gib, double mfu) {
  PlanContext ctx;
  ctx.recipe_path = recipe.path;
  ctx.config = gpt_config_from(recipe);
  ctx.device = device_spec(device, world);
  if (mfu > 0) ctx.device.mfu = mfu;
  if (device == PlanDevice::cpu) {
    if (recipe.train.precision == PrecisionChoice::bf16)
      throw ConfigError(fmt::format("{}: train.precision is bf16, which the CPU path does not have; valid with "
                                    "--device cpu: fp32 or auto (--set train.precision=fp32)",
                                    recipe.path));
    ctx.act_bytes = 4;
  } else {
    ctx.act_bytes = precision_from(recipe, Device::cuda) == Precision::fp32 ? 4 : 2;
  }
  ctx.peak_flops = device_peak(ctx.device.device(), ctx.device.name,
                               ctx.act_bytes == 2 ? DType::bf16 : DType::f32, recipe.train.peak_tflops)
                       .flops;
  ctx.host = device == PlanDevice::cpu ? HostTransients::cpu_path : HostTransients::none;
  ctx.attention = recipe.train.attention;
  ctx.memory_limit = memory_gib > 0 ? int64_t(memory_gib * 1024.0 * 1024.0 * 1024.0) : ctx.device.memory_bytes;
  return ctx;
}

PlanDevice runtime_plan_device(const Recipe& recipe, std::string* note) {
  if (device_from(recipe) == Device::cpu) return PlanDevice::cpu;
  const std::string name = first_gpu_name();
  if (name.find("H200") != std::string::npos) return PlanDevice::h200;
  if (name.find("H100") != std::string::npos) return PlanDevice::h100;
  if (name.find("A100") != std::string::npos) return PlanDevice::a100;
  if (note)
    *note = fmt::format("parallel: auto: note: the planner has no figures for the GPU \"{}\"; it ranks layouts "
                        "with an H100's",
                        name);
  return PlanDevice::h100;
}

SearchInput search_input_for(const Recipe& recipe, int world, const PlanContext& ctx) {
  SearchInput in;
  in.config = ctx.config;
  in.world = world;
  in.global_batch = recipe.train.global_batch;
  in.seq_len = recipe.train.seq_len;
  in.device = ctx.device;
  in.peak_flops = ctx.peak_flops;
  in.act_bytes = ctx.act_bytes;
  in.memory_limit = ctx.memory_limit;
  in.host = ctx.host;
  in.attention = ctx.attention;
  in.grad_reduce_dtype = grad_reduce_dtype_from(recipe);
  return in;
}

AutoLayoutChoice choose_auto_layout(const Recipe& recipe, int world, const PlanContext& ctx) {
  const ParallelConfig& p = recipe.parallel;
  SearchInput in = search_input_for(recipe, world, ctx);
  in.recompute = {recipe.train.recompute};
  const std::vector<PlanCandidate> all = search_layouts(in);
  AutoLayoutChoice choice;
  choice.searched = all.size();
  for (const PlanCandidate& c : all) {
    const PlanLayout& l = c.layout;
    if (!keeps(p.data, l.data) || !keeps(p.tensor, l.tensor) || !keeps(p.pipeline, l.pipeline) ||
        !keeps(p.zero, l.zero) || l.micro_batch != recipe.train.micro_batch ||
        (l.pipelined() && (l.schedule != p.schedule || l.virtual_stages != p.virtual_stages)))
      continue;
    const std::string rule = broken_rule(with_layout(recipe, l));
    if (!rule.empty()) {
      if (choice.refused == 0) choice.first_refusal = layout_text(l) + ": " + rule;
      ++choice.refused;
      continue;
    }
    choice.ranked.push_back(c);
  }
  const std::string keys = auto_keys_text(recipe);
  const std::string what =
      fmt::format("{}: {} {} auto", recipe.path, keys, keys.find(',') == std::string::npos ? "is" : "are");
  if (choice.ranked.empty())
    throw ConfigError(fmt::format(
        "{}, but no layout of {} ranks keeps train.micro_batch {} and the fixed parallel keys and passes the recipe's "
        "rules ({} layouts searched); valid: a micro_batch dividing train.global_batch {} / data, or fix the degrees "
        "(trainer plan --search --world {} lists every layout)",
        what, world, recipe.train.micro_batch, all.size(), recipe.train.global_batch, world));
  if (!choice.ranked.front().fits) {
    const auto least = std::min_element(choice.ranked.begin(), choice.ranked.end(),
                                        [](const PlanCandidate& a, const PlanCandidate& b) {
                                          return a.needed_bytes < b.needed_bytes;
                                        });
    throw ConfigError(fmt::format(
        "{}, but none of the {} layouts of {} ranks fits in {} per rank; the smallest, {}, needs {}; valid: more "
        "ranks, train.recompute: block, a smaller micro_batch, or train.allow_oversubscribe with fixed degrees",
        what, choice.ranked.size(), world, format_bytes(ctx.memory_limit), layout_text(least->layout),
        format_bytes(least->needed_bytes)));
  }
  choice.resolved = with_layout(recipe, choice.ranked.front().layout);
  return choice;
}

std::vector<std::string> auto_layout_report(const AutoLayoutChoice& choice, const PlanContext& ctx, int runners_up) {
  std::vector<std::string> lines;
  const PlanCandidate& best = choice.ranked.front();
  const auto fitting = std::count_if(choice.ranked.begin(), choice.ranked.end(),
                                     [](const PlanCandidate& c) { return c.fits; });
  lines.push_back(fmt::format(
      "parallel: auto chose {} on {} x {}: modelled {:.4g} s/step, {:.0f} tokens/s, MFU {:.1f}%, {} of {} per rank",
      layout_text(best.layout), best.layout.world(), ctx.device.name, best.time.step_s, best.time.tokens_per_s,
      100.0 * best.time.mfu, format_bytes(best.needed_bytes), format_bytes(ctx.memory_limit)));
  lines.push_back(fmt::format(
      "  why: the fastest modelled step of the {} layouts that fit (of {} keeping micro_batch {} and the fixed keys; "
      "{} searched); ties go to less memory",
      fitting, choice.ranked.size(), best.layout.micro_batch, choice.searched));
  if (choice.refused > 0)
    lines.push_back(fmt::format("  {} more layout{} of the search broke a recipe rule, the best of them {}",
                                choice.refused, choice.refused == 1 ? "" : "s", choice.first_refusal));
  int shown = 0;
  for (size_t i = 1; i < choice.ranked.size() && shown < runners_up; ++i) {
    const PlanCandidate& c = choice.ranked[i];
    if (!c.fits) break;
    ++shown;
    lines.push_back(fmt::format("  runner-up {}: {}: {:.4g} s/step ({:+.1f}%), MFU {:.1f}%, {}", shown + 1,
                                layout_text(c.layout), c.time.step_s,
                                100.0 * (c.time.step_s / best.time.step_s - 1.0), 100.0 * c.time.mfu,
                                format_bytes(c.needed_bytes)));
  }
  return lines;
}

Recipe resolve_auto_layout(const Recipe& recipe, int world, std::vector<std::string>* report,
                           const LayoutTimer& timer) {
  if (!recipe.auto_layout()) return recipe;
  std::string note;
  const PlanDevice device = runtime_plan_device(recipe, &note);
  const PlanContext ctx = plan_context_for(recipe, world, device);
  const AutoLayoutChoice choice = choose_auto_layout(recipe, world, ctx);
  std::vector<std::string> lines = auto_layout_report(choice, ctx);
  if (!note.empty()) lines.insert(lines.begin(), note);
  Recipe chosen = choice.resolved;
  const int k = recipe.parallel.auto_bench;
  if (k > 0 && timer) {
    double best_s = 0;
    int timed = 0;
    for (const PlanCandidate& c : choice.ranked) {
      if (timed == k || !c.fits) break;
      const Recipe candidate = with_layout(recipe, c.layout);
      const double s = timer(candidate);
      lines.push_back(fmt::format("  auto_bench {}: {}: measured {:.4g} s/step (modelled {:.4g})", timed + 1,
                                  layout_text(c.layout), s, c.time.step_s));
      if (timed == 0 || s < best_s) {
        best_s = s;
        chosen = candidate;
      }
      ++timed;
    }
    const PlanLayout won = plan_layout_from(chosen, ctx.device.device());
    lines.push_back(fmt::format("parallel: auto_bench kept {}: the fastest measured of {} timed", layout_text(won),
                                timed));
  }
  if (report) report->insert(report->end(), lines.begin(), lines.end());
  return chosen;
}

}  // namespace trainer
