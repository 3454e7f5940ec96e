// ProcessGrid implementation: group communicators split from world.
#include "parallel/process_grid.h"

#include "kernels/base/check.h"

namespace trainer {

ProcessGrid::ProcessGrid(Comm& world, const ParallelDims& dims, PipelineLinks links) : world_(world), dims_(dims) {
  TRAINER_CHECK(world.size() == dims.world(), "world size " + std::to_string(world.size()) +
                                                  " != data*tensor*pipeline " + std::to_string(dims.world()));
  coords_ = dims.coords_of(world.rank());
  const GridCoords& c = coords_;
  tp_ = world.split(dims.tensor_group(c), c.tp, "tensor");
  dp_ = world.split(dims.data_group(c), c.dp, "data");
  pp_ = world.split(dims.pipeline_group(c), c.pp, "pipeline");
  pp_grad_ = world.split(dims.pipeline_group(c), c.pp, "pipeline (gradients)");
  const bool end_stage = dims.end_stage(c.pp);
  if (links == PipelineLinks::ring && dims.pipelined()) {
    // Keyed by stage: stage 0 is rank 0, the last stage rank 1 (what pipeline_route expects).
    const int color = end_stage ? dims.pipeline_group(c) : -1;
    pp_wrap_act_ = world.split(color, c.pp, "pipeline wrap-around");
    pp_wrap_grad_ = world.split(color, c.pp, "pipeline wrap-around (gradients)");
  }
  embed_ = world.split(end_stage ? dims.pipeline_group(c) : -1, c.pp, "tied embedding");
}

PipelineComms ProcessGrid::pipeline_comms() {
  if (!dims_.pipelined()) return PipelineComms{};
  return PipelineComms{pp_.get(), pp_grad_.get(), pp_wrap_act_.get(), pp_wrap_grad_.get()};
}

}  // namespace trainer
