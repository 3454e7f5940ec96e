// The one translation of a recipe into each component's options: every caller (Trainer for
// train, bench and sample; plan; checkpoints) builds a component's options here rather than
// field by field, and "auto" (device, precision) is resolved here only. What a rank's model
// objects are built from goes through the recipe's plan layout (plan_layout_from, then
// rank_options in app/plan/rank_options.h), the very path the planner's dry run takes.
#pragma once

#include <cstdint>
#include <vector>

#include "app/checkpoint/checkpoint_manifest.h"
#include "app/plan/plan_memory.h"
#include "app/recipe/recipe.h"
#include "data/loader.h"
#include "kernels/backend.h"
#include "model/gpt_config.h"
#include "model/gpt_stage.h"
#include "model/lr_schedule.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/process_grid.h"
#include "parallel/zero_policy.h"

namespace trainer {

// train.device with auto resolved: CUDA when a GPU answers, else the CPU.
Device device_from(const Recipe& recipe);
// train.precision with auto resolved for `device`: bf16 on CUDA, fp32 on the CPU.
Precision precision_from(const Recipe& recipe, Device device);

GptConfig gpt_config_from(const Recipe& recipe);
// train.device stays a choice (make_backend resolves it and reports a request it cannot meet);
// the precision is resolved for the device this process would get.
BackendOptions backend_options_from(const Recipe& recipe, int local_rank);
// parallel.grad_reduce_dtype as the dtype the parameter store reduces gradients in.
DType grad_reduce_dtype_from(const Recipe& recipe);
// The pipeline's schedule shape: stages, micro-batches per step and chunks per rank.
PipeShape pipe_shape_from(const Recipe& recipe);
LrSchedule lr_schedule_from(const Recipe& recipe);
// data.train (and data.stages) for the data rank at coords.dp, shuffled.
LoaderOptions train_loader_options_from(const Recipe& recipe, const GridCoords& coords);
// data.val, one loader per source: eval.batches split over the data ranks, in file order.
std::vector<LoaderOptions> val_loader_options_from(const Recipe& recipe, const GridCoords& coords);
// What the Trainer reads at every step and evaluation, translated once at its start: a step never
// reads the recipe.
struct StepOptions {
  int micro_batch = 1;     // sequences per micro-batch per data rank
  int seq_len = 1;
  int grad_accum = 1;      // micro-batches per data rank per step
  uint64_t seed = 0;       // keys the synthetic batches (bench without data) and AdamW's rounding
  Schedule schedule = Schedule::one_f_one_b;
  OptimizerConfig optimizer;   // AdamW's hyper-parameters and grad_clip
  int eval_batches = 0;        // micro-batches of one evaluation over all data ranks (eval.batches)
  int eval_micro_batches = 0;  // of them, per data rank
  std::vector<std::string> val_names;  // data.val's sources as metrics name them
  std::vector<double> val_weights;     // and their weights in val_loss
};
StepOptions step_options_from(const Recipe& recipe);
// The AdamW step for 1-based step `step` at learning rate lr, with grad_clip applied to
// grad_norm as torch.nn.utils.clip_grad_norm_ does.
AdamWStep adamw_step(const StepOptions& options, double lr, double grad_norm, int64_t step);
// The recipe's part of a checkpoint manifest: seed, grid, ZeRO stage, stage split, model and
// the recipe itself (step, loader state, files and pieces are the writer's).
CkptManifest manifest_from(const Recipe& recipe);
// The layout plan models for the recipe's own grid on `device`.
PlanLayout plan_layout_from(const Recipe& recipe, Device device);

// Sets o's boundary and token from data.document_token (when o.any()): a token id given is a
// document start; auto is the tokenizer's BOS (end-of-text for gpt2 and byte: what data
// prepare puts before each document), else a document starts right after each EOS; a
// tokenizer with neither is a ConfigError naming the keys.
void document_boundary_from(const Recipe& recipe, DocumentOptions* o);

}  // namespace trainer
