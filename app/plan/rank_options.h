// The one translation from a layout to what one rank builds (RankOptions, model/rank_model.h):
// the Trainer passes the recipe's layout (plan_layout_from), the planner's dry run the layout it
// plans, so the plan's objects are the run's. PlanLayout is the layout's one set of options.
#pragma once

#include "app/plan/plan_memory.h"
#include "model/rank_model.h"
#include "parallel/parallel_dims.h"

namespace trainer {

// The stage's options under `recompute` (the layout's own, or another mode the plan reports).
StageOptions stage_options(const PlanLayout& layout, int pp_rank, Recompute recompute);
// What the rank at `at` builds.
RankOptions rank_options(const PlanLayout& layout, const GridCoords& at);

}  // namespace trainer
