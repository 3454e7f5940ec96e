// launcher_rank, under_launcher: what the launcher set in the environment, before MPI starts.
#include <cstdlib>

#include "app/cli/commands.h"

namespace trainer {

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

bool under_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(var)) return true;
  // SLURM_PROCID is also set in a batch script's own shell; an srun step of several tasks
  // sets its task count.
  const char* step_tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  return std::getenv("SLURM_PROCID") && step_tasks && std::atoi(step_tasks) > 1;
}

}  // namespace trainer
