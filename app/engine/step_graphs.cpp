// Captured and replayed micro-batch passes (see step_graphs.h).
#include "app/engine/step_graphs.h"

#include <fmt/core.h>

#include <algorithm>

namespace trainer {

void StepGraphRunner::passes(int i, int m) {
  stage_.forward(i, 0, StageMode::train);
  store_.begin_micro(i == m - 1);
  stage_.backward(i, 0);
}

void StepGraphRunner::run_micro(int i, int m) {
  const size_t kind = i == m - 1 ? 1 : 0;
  std::unique_ptr<OpGraph>& graph = graphs_[kind];
  if (graph && !graph->valid()) graph.reset();
  if (!graph && !ran_eagerly_[kind]) {
    passes(i, m);
    ran_eagerly_[kind] = true;
    ++eager_runs_;
    return;
  }
  if (!graph) {
    backend_.begin_capture();
    try {
      passes(i, m);
      graph = backend_.end_capture();
    } catch (...) {
      backend_.abort_capture();
      throw;
    }
    ++captures_;
    max_nodes_ = std::max(max_nodes_, graph->nodes());
  }
  graph->replay();
  ++replays_;
}

std::string graphs_text(const StepGraphRunner& g) {
  return fmt::format("{} micro-batch{} eager, {} graph{} captured ({} nodes each at most), {} replay{}",
                     g.eager_runs(), g.eager_runs() == 1 ? "" : "es", g.captures(), g.captures() == 1 ? "" : "s",
                     g.max_nodes(), g.replays(), g.replays() == 1 ? "" : "s");
}

}  // namespace trainer
