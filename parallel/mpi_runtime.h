// MpiRuntime: starts MPI (a plain process runs as an MPI singleton, no launcher needed) and
// finalises it on destruction. Owns the world communicator as a Comm.
// When OMP_NUM_THREADS is not set, it gives each rank an equal share of the node's cores
// (at least one thread), so that several ranks on one node do not oversubscribe it; a value
// the user set is kept.
#pragma once

#include <memory>

#include "parallel/comm.h"

namespace trainer {

class MpiRuntime {
 public:
  // timeout_s bounds every wait on a collective or message: a longer wait means a rank died,
  // and the job is aborted with a message instead of hanging.
  explicit MpiRuntime(double timeout_s);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  Comm& world() { return *world_; }
  // Rank among the processes on this node (picks the GPU).
  int local_rank() const { return local_rank_; }
  // Ranks on this node.
  int local_size() const { return local_size_; }

 private:
  std::unique_ptr<Comm> world_;
  int local_rank_ = 0;
  int local_size_ = 1;
  bool owns_mpi_ = false;
};

}  // namespace trainer
