// MpiRuntime implementation: MPI_Init_thread (FUNNELED: only the main thread calls MPI; OpenMP
// workers never do), node-local rank from a shared-memory split, MPI_Finalize at the end.
#include "parallel/mpi_runtime.h"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include "parallel/mpi_comm.h"

namespace trainer {

MpiRuntime::MpiRuntime(double timeout_s) {
  int initialized = 0;
  TRAINER_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    TRAINER_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    owns_mpi_ = true;
  }
  world_ = std::make_unique<MpiComm>(MPI_COMM_WORLD, "world", timeout_s);
  MPI_Comm node;
  TRAINER_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_->rank(),
                                        MPI_INFO_NULL, &node));
  TRAINER_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
  TRAINER_MPI_CHECK(MPI_Comm_size(node, &local_size_));
  TRAINER_MPI_CHECK(MPI_Comm_free(&node));
  if (std::getenv("OMP_NUM_THREADS") == nullptr && local_size_ > 1)
    omp_set_num_threads(std::max(1, omp_get_num_procs() / local_size_));
}

MpiRuntime::~MpiRuntime() {
  world_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

}  // namespace trainer
