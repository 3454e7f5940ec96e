// What `trainer plan` prints: the memory and FLOPs of one layout, stage by stage, from a dry
// run of the trainer's own objects; and the ranked table of a layout search. Text for people, JSON
// (one object) for scripts (scripts/sweep.sh reads the search's).
#pragma once

#include <string>
#include <vector>

#include "app/plan/flops.h"
#include "app/plan/plan_device.h"
#include "app/plan/plan_memory.h"
#include "app/plan/plan_search.h"
#include "app/plan/plan_time.h"
#include "model/gpt_config.h"

namespace trainer {

struct PlanContext {
  std::string recipe_path;
  GptConfig config;
  DeviceSpec device;
  double peak_flops = 0;     // per rank
  int64_t act_bytes = 4;
  int64_t memory_limit = 0;  // per rank
  HostTransients host = HostTransients::none;  // cpu_path for --device cpu
  AttentionImpl attention = AttentionImpl::auto_detect;  // the recipe's train.attention
};

struct PlanReport {
  PlanContext ctx;
  PlanLayout layout;
  std::vector<PlanRankMemory> stages;  // one per pipeline stage
  StepEstimate time;
  int largest_stage() const;      // by peak
  int64_t attention_workspace() const;  // plan_attention_workspace of this layout
  int64_t needed_bytes() const;  // the largest rank's peak + the runtime figure + attention_workspace
};

// Every pipeline stage's memory from a dry run of the trainer's own objects (plan_dry_run.h; tensor
// and data rank 0: the others of a stage hold the same sizes) and the step-time model.
PlanReport build_plan_report(const PlanContext& ctx, const PlanLayout& layout);

// `trainer plan --ops`: every op of one training step of each pipeline stage (plan_step_ops:
// the dry run with bench --profile's rows), with what it moves and computes (OpCost) and the
// time the device's ceilings allow it: a roofline floor, max(bytes / HBM bandwidth, FLOPs /
// dense peak), against ops_roofline's figures (the data sheet's, the measured ones, or the
// user's). A floor per op, not the step's prediction: launches, latency, communication and
// kernels below their ceilings are not in it; `bench --profile` measures the same rows.
struct PlanOpRow {
  std::string op, shape;
  double calls = 0, bytes = 0, flops = 0;  // per step
  double floor_s = 0;
  bool compute_bound = false;  // FLOPs / peak is the larger term
};
struct PlanStageOps {
  int pp_rank = 0;
  std::vector<PlanOpRow> rows;  // largest floor first
  double bytes = 0, flops = 0, floor_s = 0;
};
// The ceilings --ops reads against (flops.h's roofline_for; on --device cpu without --bandwidth,
// the planner's order-of-magnitude bandwidth). Throws ConfigError as roofline_for does.
RooflineChoice ops_roofline(const PlanContext& ctx, Ceilings ceilings, double bandwidth_override,
                            double recipe_peak_tflops);
std::vector<PlanStageOps> build_ops_report(const PlanContext& ctx, const PlanLayout& layout, const RooflineChoice& roof);
std::string format_ops_text(const PlanContext& ctx, const PlanLayout& layout, const RooflineChoice& roof,
                            const std::vector<PlanStageOps>& stages);
std::string format_ops_json(const PlanContext& ctx, const RooflineChoice& roof, const std::vector<PlanStageOps>& stages);

std::string format_plan_text(const PlanReport& report);
std::string format_plan_json(const PlanReport& report);
std::string format_search_text(const PlanContext& ctx, const std::vector<PlanCandidate>& ranked, int top,
                               double elapsed_s);
// recipe_recompute: the recipe's own mode, so a sweep can keep to it.
std::string format_search_json(const PlanContext& ctx, const std::vector<PlanCandidate>& ranked, int world,
                               Recompute recipe_recompute);

}  // namespace trainer
