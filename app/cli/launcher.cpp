// launcher_rank, under_launcher: what the launcher set in the environment, before MPI starts
// (parallel/launcher_env.h reads it).
#include "app/cli/commands.h"
#include "parallel/launcher_env.h"

namespace trainer {

int launcher_rank() {
  const LauncherEnv env = launcher_env();
  return env.task_id > 0 ? env.task_id : 0;
}

bool under_launcher() {
  const LauncherEnv env = launcher_env();
  // A one-task srun step is a single process, as a plain run is.
  if (env.kind == LauncherKind::srun) return env.step_tasks > 1;
  return env.kind != LauncherKind::none;
}

}  // namespace trainer
