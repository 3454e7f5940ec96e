// ProcessGrid implementation: group communicators split from world.
#include "parallel/process_grid.h"

#include "kernels/base/check.h"

namespace trainer {

int grid_rank(const GridDims& d, const GridCoords& c) { return (c.pp * d.data + c.dp) * d.tensor + c.tp; }

GridCoords grid_coords(const GridDims& d, int rank) {
  GridCoords c;
  c.tp = rank % d.tensor;
  c.dp = (rank / d.tensor) % d.data;
  c.pp = rank / (d.tensor * d.data);
  return c;
}

std::string rank_label(int world_rank, const GridCoords& c) {
  return "rank " + std::to_string(world_rank) + " (data " + std::to_string(c.dp) + ", tensor " + std::to_string(c.tp) +
         ", pipeline " + std::to_string(c.pp) + ")";
}

ProcessGrid::ProcessGrid(Comm& world, const GridDims& dims, PipelineLinks links) : world_(world), dims_(dims) {
  TRAINER_CHECK(world.size() == dims.world(), "world size " + std::to_string(world.size()) +
                                                  " != data*tensor*pipeline " + std::to_string(dims.world()));
  coords_ = grid_coords(dims, world.rank());
  const GridCoords& c = coords_;
  tp_ = world.split(c.pp * dims.data + c.dp, c.tp, "tensor");
  dp_ = world.split(c.pp * dims.tensor + c.tp, c.dp, "data");
  pp_ = world.split(c.dp * dims.tensor + c.tp, c.pp, "pipeline");
  pp_grad_ = world.split(c.dp * dims.tensor + c.tp, c.pp, "pipeline (gradients)");
  const bool end_stage = dims.pipeline > 1 && (c.pp == 0 || c.pp == dims.pipeline - 1);
  if (links == PipelineLinks::ring && dims.pipeline > 1) {
    // Keyed by stage: stage 0 is rank 0, the last stage rank 1 (what pipeline_route expects).
    const int color = end_stage ? c.dp * dims.tensor + c.tp : -1;
    pp_wrap_act_ = world.split(color, c.pp, "pipeline wrap-around");
    pp_wrap_grad_ = world.split(color, c.pp, "pipeline wrap-around (gradients)");
  }
  embed_ = world.split(end_stage ? c.dp * dims.tensor + c.tp : -1, c.pp, "tied embedding");
}

PipelineComms ProcessGrid::pipeline_comms() {
  if (dims_.pipeline == 1) return PipelineComms{};
  return PipelineComms{pp_.get(), pp_grad_.get(), pp_wrap_act_.get(), pp_wrap_grad_.get()};
}

}  // namespace trainer
