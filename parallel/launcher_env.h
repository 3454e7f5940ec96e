// LauncherEnv: what the process launcher (Slurm's srun, OpenMPI's mpiexec, another PMI/PMIx
// launcher) says about this process, read from the environment. It names a rank in messages
// the way the launcher does (Slurm's job, step and task id), and gives the launcher's own
// local rank for the start-of-run report. Invariant: kind is srun only for a process that
// srun started (SLURM_STEP_ID is set); mpiexec run inside a Slurm batch script is mpiexec
// (its ranks inherit the batch shell's SLURM_PROCID 0, which is not their task id).
#pragma once

#include <functional>
#include <string>

namespace trainer {

enum class LauncherKind { none, mpiexec, srun, pmi };

struct LauncherEnv {
  LauncherKind kind = LauncherKind::none;
  int task_id = -1;       // OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMIX_RANK or PMI_RANK; -1: none
  int local_id = -1;      // OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID; -1: not given
  int step_tasks = -1;    // SLURM_STEP_NUM_TASKS under srun; -1: not given
  std::string slurm_job;  // SLURM_JOB_ID, with ".STEP" under srun; empty outside Slurm
};

// Reads the variables through get (nullptr: unset), so that tests need not set them.
LauncherEnv launcher_env_from(const std::function<const char*(const char*)>& get);
// This process's environment.
LauncherEnv launcher_env();

const char* launcher_kind_name(LauncherKind kind);
// ", Slurm job 12.0 task 3" under srun, ", Slurm job 12" for mpiexec inside a Slurm job, empty
// otherwise: appended to "rank R" in messages.
std::string slurm_tag(const LauncherEnv& env);

}  // namespace trainer
