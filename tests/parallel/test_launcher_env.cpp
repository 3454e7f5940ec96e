// LauncherEnv: which launcher started a process, from its environment: srun (only with a step
// id), mpiexec (also inside a Slurm batch job, whose SLURM_PROCID is the shell's), other PMI
// launchers, none; numbers that do not parse read as absent; the Slurm tag of messages.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "parallel/launcher_env.h"

using namespace trainer;

namespace {

LauncherEnv from(const std::map<std::string, std::string>& vars) {
  return launcher_env_from([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("launcher_env: srun, mpiexec, mpiexec inside a Slurm job, PMIx, none") {
  const LauncherEnv srun = from({{"SLURM_JOB_ID", "12"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "3"},
                                 {"SLURM_LOCALID", "1"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"PMIX_RANK", "3"}});
  CHECK(srun.kind == LauncherKind::srun);
  CHECK(srun.task_id == 3);
  CHECK(srun.local_id == 1);
  CHECK(srun.step_tasks == 4);
  CHECK(srun.slurm_job == "12.0");
  CHECK(slurm_tag(srun) == ", Slurm job 12.0 task 3");

  // mpiexec in a batch script: SLURM_PROCID 0 is the batch shell's, not the rank's task id.
  const LauncherEnv inside = from({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"},
                                   {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  CHECK(inside.kind == LauncherKind::mpiexec);
  CHECK(inside.task_id == 5);
  CHECK(inside.local_id == 1);
  CHECK(slurm_tag(inside) == ", Slurm job 7");

  const LauncherEnv mpiexec = from({{"OMPI_COMM_WORLD_RANK", "2"}});
  CHECK(mpiexec.kind == LauncherKind::mpiexec);
  CHECK(mpiexec.local_id == -1);
  CHECK(slurm_tag(mpiexec).empty());

  // A batch script's own shell (no step id) is no launcher.
  CHECK(from({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}}).kind == LauncherKind::none);
  const LauncherEnv pmix = from({{"PMIX_RANK", "4"}});
  CHECK(pmix.kind == LauncherKind::pmi);
  CHECK(pmix.task_id == 4);
  CHECK(from({}).kind == LauncherKind::none);
  CHECK(from({}).task_id == -1);
}

TEST_CASE("launcher_env: what is echoed is what is true, and printable") {
  // A step id and SLURM_PROCID left in a plain shell, without a job: no srun, no "Slurm job .zz".
  const LauncherEnv stray = from({{"SLURM_STEP_ID", "zz"}, {"SLURM_PROCID", "0"}});
  CHECK(stray.kind == LauncherKind::none);
  CHECK(stray.task_id == -1);
  CHECK(stray.slurm_job.empty());
  CHECK(slurm_tag(stray).empty());
  CHECK(from({{"SLURM_JOB_ID", ""}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}}).kind == LauncherKind::none);
  CHECK(from({{"SLURM_JOB_ID", "12"}, {"SLURM_STEP_ID", ""}, {"SLURM_PROCID", "0"}}).kind == LauncherKind::none);
  // Control characters (a newline, a terminal escape) in the job and step ids are escaped.
  const LauncherEnv hostile =
      from({{"SLURM_JOB_ID", "12\n\x1b[31mred"}, {"SLURM_STEP_ID", "0\r"}, {"SLURM_PROCID", "1"}});
  CHECK(hostile.kind == LauncherKind::srun);
  CHECK(hostile.slurm_job == "12\\x0a\\x1b[31mred.0\\x0d");
  CHECK(slurm_tag(hostile) == ", Slurm job 12\\x0a\\x1b[31mred.0\\x0d task 1");
  const LauncherEnv inside = from({{"SLURM_JOB_ID", "7\x7f"}, {"OMPI_COMM_WORLD_RANK", "0"}});
  CHECK(slurm_tag(inside) == ", Slurm job 7\\x7f");
}

TEST_CASE("launcher_env: numbers that do not parse read as absent") {
  for (const char* bad : {"", "x", "3x", "-1", "99999999999"}) {
    CAPTURE(bad);
    CHECK(from({{"OMPI_COMM_WORLD_RANK", bad}}).kind == LauncherKind::none);
    const LauncherEnv e = from({{"SLURM_JOB_ID", "1"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"},
                                {"SLURM_LOCALID", bad}});
    CHECK(e.kind == LauncherKind::srun);
    CHECK(e.local_id == -1);
  }
}
