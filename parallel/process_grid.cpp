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

ProcessGrid::ProcessGrid(Comm& world, const GridDims& dims) : world_(world), dims_(dims) {
  TRAINER_CHECK(world.size() == dims.world(), "world size " + std::to_string(world.size()) +
                                                  " != data*tensor*pipeline " + std::to_string(dims.world()));
  coords_ = grid_coords(dims, world.rank());
  const GridCoords& c = coords_;
  tp_ = world.split(c.pp * dims.data + c.dp, c.tp, "tensor");
  dp_ = world.split(c.pp * dims.tensor + c.tp, c.dp, "data");
  pp_ = world.split(c.dp * dims.tensor + c.tp, c.pp, "pipeline");
  pp_grad_ = world.split(c.dp * dims.tensor + c.tp, c.pp, "pipeline (gradients)");
  bool holds_embedding = dims.pipeline > 1 && (c.pp == 0 || c.pp == dims.pipeline - 1);
  embed_ = world.split(holds_embedding ? c.dp * dims.tensor + c.tp : -1, c.pp, "tied embedding");
}

}  // namespace trainer
