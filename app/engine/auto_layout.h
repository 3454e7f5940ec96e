// `parallel: auto`: the layout (data, tensor, pipeline, ZeRO stage) chosen at start for the
// world size, the device and the model, by the planner's search (app/plan/plan_search.h).
//
// Invariants:
// - Only the degrees written as auto are chosen; every other choice of the recipe
//   (micro_batch, schedule, recompute, the fixed degrees) is kept, and a candidate must pass
//   every recipe rule (check_recipe) once resolved.
// - The choice is the first of the search's ranking that fits in memory: fastest modelled
//   step, then least memory, then the search's fixed order — deterministic for the same recipe,
//   world size and device, so every rank (and a resume on the same world) chooses the same.
// - No layout fitting, or none valid, is a ConfigError (exit 2) naming the closest candidates.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "app/plan/plan_device.h"
#include "app/plan/plan_report.h"
#include "app/plan/plan_search.h"
#include "app/recipe/recipe.h"

namespace trainer {

// What the planner assumes for `recipe` on `world` ranks of `device`; memory_gib and mfu
// override the device's figures when > 0. The precision follows the trainer's rule for the
// device (fp32 on the CPU; on a GPU bf16 unless train.precision is fp32).
PlanContext plan_context_for(const Recipe& recipe, int world, PlanDevice device, double memory_gib = 0,
                             double mfu = 0);

// The planner's search over every layout of `world` ranks for the recipe's model and batch.
SearchInput search_input_for(const Recipe& recipe, int world, const PlanContext& ctx);

// The device this process would train on, as a planner device: cpu, or the GPU's kind from its
// name; a GPU the planner does not know gets h100's figures and a note saying so.
PlanDevice runtime_plan_device(const Recipe& recipe, std::string* note);

struct AutoLayoutChoice {
  Recipe resolved;                    // the recipe with the chosen degrees
  std::vector<PlanCandidate> ranked;  // candidates keeping the recipe's fixed choices, best first
  size_t searched = 0;                // layouts the search evaluated for the world size
  size_t refused = 0;                 // of those keeping the fixed choices, how many broke a recipe rule
  std::string first_refusal;          // the best-ranked of them, with the rule's message
};

// The choice for a recipe with auto degrees (see the top of this file).
AutoLayoutChoice choose_auto_layout(const Recipe& recipe, int world, const PlanContext& ctx);

// The start-of-run lines: the chosen layout with its modelled step time, MFU and memory, the
// runners-up and why the first won.
std::vector<std::string> auto_layout_report(const AutoLayoutChoice& choice, const PlanContext& ctx,
                                            int runners_up = 3);

// Seconds per step of a resolved recipe on the job, identical on every rank (auto_bench.h).
using LayoutTimer = std::function<double(const Recipe&)>;

// For train and bench: the recipe with its auto degrees chosen for this process's device and
// `world` ranks, the report lines appended to *report; a recipe without auto is returned as is.
// With parallel.auto_bench k > 0 and a timer, the k best fitting candidates are timed and the
// fastest measured wins (ties: the better modelled).
Recipe resolve_auto_layout(const Recipe& recipe, int world, std::vector<std::string>* report,
                           const LayoutTimer& timer = nullptr);

}  // namespace trainer
