// ParallelDims: how a rank is named in traces and hang reports.
#include "parallel/parallel_dims.h"

namespace trainer {

std::string rank_label(int world_rank, const GridCoords& c) {
  return "rank " + std::to_string(world_rank) + " (data " + std::to_string(c.dp) + ", tensor " + std::to_string(c.tp) +
         ", pipeline " + std::to_string(c.pp) + ")";
}

}  // namespace trainer
