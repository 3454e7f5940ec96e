// train.graphs: step. Each micro-batch's forward and backward (GptStage::forward, the store's
// begin_micro, GptStage::backward: what run_step_passes runs for a micro-batch on one stage)
// is captured once into an OpGraph and replayed: on CUDA one graph launch instead of a few
// hundred kernel launches. The layouts (recipe_checks.cpp): one process (no collective or
// stage-to-stage message between the ops) with ZeRO 0 or 1 (no pool buffers taken during the
// backward); the caller sets the micro-batch's tokens (GptStage::set_batch) before each run.
// Invariants:
// - A kind of micro-batch (the step's last, which marks its gradients complete, and the
//   others) runs eagerly the first time: the workspace grows, cuBLASLt and cuDNN plans are
//   made, none of which may happen under capture. The second time it is captured (the
//   capture runs nothing) and replayed; later times replay.
// - A replay is bit for bit the eager run: the same ops on the same buffers in the same order.
//   Host work inside the passes (the store's bucket bookkeeping, a no-op without a data
//   group) is not repeated.
// - A graph whose memory moved (OpGraph::valid() false) is captured again.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "model/gpt_stage.h"
#include "model/param_store.h"

namespace trainer {

class StepGraphRunner {
 public:
  StepGraphRunner(GptStage& stage, ParamStore& store, Backend& backend) : stage_(stage), store_(store), backend_(backend) {}

  // Micro-batch i of m: its forward and backward, eager, captured or replayed (see above).
  void run_micro(int i, int m);
  int64_t eager_runs() const { return eager_runs_; }
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }
  size_t max_nodes() const { return max_nodes_; }  // of the graphs captured so far

 private:
  void passes(int i, int m);

  GptStage& stage_;
  ParamStore& store_;
  Backend& backend_;
  std::array<std::unique_ptr<OpGraph>, 2> graphs_;  // [0]: not the step's last micro-batch, [1]: its last
  std::array<bool, 2> ran_eagerly_{false, false};
  int64_t eager_runs_ = 0;
  int64_t captures_ = 0;
  int64_t replays_ = 0;
  size_t max_nodes_ = 0;
};

// "2 micro-batches eager, 2 graphs captured (61 nodes each at most), 14 replays": for reports.
std::string graphs_text(const StepGraphRunner& g);

}  // namespace trainer
