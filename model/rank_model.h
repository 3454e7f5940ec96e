// RankModel: one rank's model objects, built one way for every caller from one set of options:
// the stage layout (what this rank holds), the parameter store over it (flat buffers, ZeRO)
// and the stage that runs its forward and backward. The Trainer (train, bench, eval, sample)
// and the planner's dry run (app/plan/plan_dry_run.cpp) both build through it, from options that
// one function makes (app/plan/rank_options.h), so the plan measures the very objects a run
// allocates.
// Invariant: built in dependency order, layout -> store -> (parameters initialised) -> stage:
// the stage's activations are allocated after the parameters are filled, as the memory plan's
// init peak assumes.
#pragma once

#include <functional>
#include <memory>

#include "kernels/backend.h"
#include "model/gpt_config.h"
#include "model/gpt_stage.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/comm.h"
#include "parallel/zero_policy.h"

namespace trainer {

struct RankOptions {
  LayoutOptions layout;
  ZeroPolicy zero = zero_policy(0);
  double bucket_mb = 25.0;
  DType grad_reduce_dtype = DType::f32;
  StageOptions stage;
};

// The groups a rank's objects talk over.
struct RankComms {
  Comm& data;            // the data group: gradient reductions, ZeRO shards
  Comm* tensor;          // the tensor group (null without tensor parallelism)
  Comm* tied_embedding;  // the first and last stage's pair for a tied head (null elsewhere)
};

class RankModel {
 public:
  // init fills the parameters between the store and the stage (null: leave them as allocated).
  RankModel(const GptConfig& config, const RankOptions& options, Backend& backend, RankComms comms,
            const std::function<void(ParamStore&)>& init = nullptr);

  const StageLayout& layout() const { return layout_; }
  ParamStore& store() { return store_; }
  GptStage& stage() { return *stage_; }
  const RankOptions& options() const { return options_; }
  // A stage over the same layout and store with other options (the planner's figures for the
  // other recomputation modes); allocates its own activations.
  std::unique_ptr<GptStage> other_stage(const StageOptions& options);

 private:
  RankOptions options_;
  Backend& backend_;
  Comm* tensor_;
  StageLayout layout_;
  ParamStore store_;
  std::unique_ptr<GptStage> stage_;
};

}  // namespace trainer
