// launch_line: the start-of-run report's launcher line names srun's job, step and task, rank
// 0's two local ranks, the GPU binding on GPUs and ranks whose local ranks disagree; nothing
// for a process no launcher started (an MPI singleton's own PMIX_RANK included); what comes
// from the environment is escaped.
#include <doctest/doctest.h>

#include "app/engine/launch_report.h"

using namespace trainer;

TEST_CASE("launch_line: srun, mpiexec inside Slurm, GPUs, disagreeing local ranks, none") {
  LaunchFacts f;
  CHECK(launch_line(f).empty());

  f.env.kind = LauncherKind::srun;
  f.env.slurm_job = "12.0";
  f.env.task_id = 0;
  f.env.local_id = 0;
  f.world = 4;
  f.local_size = 4;
  CHECK(launch_line(f) == "launcher: srun, Slurm job 12.0, 4 ranks; rank 0 is task 0, local rank 0 of 4 on its node "
                          "(SLURM_LOCALID 0)");
  f.gpu = true;
  f.visible_devices = "0,1,2,3";
  f.mismatched_ranks = 2;
  f.first_mismatch = 1;
  CHECK(launch_line(f) == "launcher: srun, Slurm job 12.0, 4 ranks; rank 0 is task 0, local rank 0 of 4 on its node "
                          "(SLURM_LOCALID 0); GPU = local rank % visible GPUs (CUDA_VISIBLE_DEVICES 0,1,2,3); note: "
                          "on 2 ranks (first: rank 1) SLURM_LOCALID differs from the local rank, which picks the GPU");

  LaunchFacts m;
  m.env.kind = LauncherKind::mpiexec;
  m.env.slurm_job = "7";
  m.env.task_id = 0;
  m.world = 2;
  m.local_size = 2;
  m.gpu = true;
  LaunchFacts one = m;
  one.env.slurm_job.clear();
  one.world = 1;
  one.local_size = 1;
  one.gpu = false;
  CHECK(launch_line(one) == "launcher: mpiexec, 1 rank; rank 0 is task 0, local rank 0 of 1 on its node");
  CHECK(launch_line(m) == "launcher: mpiexec inside Slurm job 7, 2 ranks; rank 0 is task 0, local rank 0 of 2 on its "
                          "node; GPU = local rank % visible GPUs (CUDA_VISIBLE_DEVICES unset)");
  // An MPI singleton's own PMIX_RANK is no launcher; a PMI launcher of several ranks is one.
  LaunchFacts single;
  single.env.kind = LauncherKind::pmi;
  single.env.task_id = 0;
  single.world = 1;
  single.local_size = 1;
  CHECK(launch_line(single).empty());
  single.world = 2;
  single.local_size = 2;
  CHECK(launch_line(single) == "launcher: PMI, 2 ranks; rank 0 is task 0, local rank 0 of 2 on its node");
  // The environment's text is echoed with its control characters escaped (no log injection).
  m.visible_devices = "0\n\x1b[2Jfake line";
  CHECK(launch_line(m) == "launcher: mpiexec inside Slurm job 7, 2 ranks; rank 0 is task 0, local rank 0 of 2 on its "
                          "node; GPU = local rank % visible GPUs (CUDA_VISIBLE_DEVICES 0\\x0a\\x1b[2Jfake line)");
}
