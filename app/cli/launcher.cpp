// launcher_rank: the process's rank as the launcher set it, before MPI is initialised.
#include <cstdlib>

#include "app/cli/commands.h"

namespace trainer {

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

}  // namespace trainer
