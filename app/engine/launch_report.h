// launch_report: the start-of-run report's line on how the job was launched: the launcher
// (srun, mpiexec), Slurm's job and step, rank 0's task id, its local rank (from the MPI
// shared-memory split, which picks the GPU) beside the launcher's own (SLURM_LOCALID,
// OMPI_COMM_WORLD_LOCAL_RANK), and ranks whose two local ranks differ.
#pragma once

#include <string>

#include "parallel/launcher_env.h"

namespace trainer {

struct LaunchFacts {
  LauncherEnv env;           // rank 0's
  int world = 1;
  int local_rank = 0;        // rank 0's, from the shared-memory split
  int local_size = 1;        // ranks on rank 0's node
  int mismatched_ranks = 0;  // ranks whose launcher local rank is given and differs
  int first_mismatch = -1;   // the lowest such rank
  bool gpu = false;          // the backend runs on GPUs
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES; empty when unset
};

// "launcher: ..." without a newline; empty for a process no launcher started.
std::string launch_line(const LaunchFacts& facts);

}  // namespace trainer
