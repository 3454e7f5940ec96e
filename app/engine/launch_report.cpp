// launch_line (see launch_report.h).
#include "app/engine/launch_report.h"

#include <fmt/core.h>

#include "kernels/base/excerpt.h"

namespace trainer {

std::string launch_line(const LaunchFacts& f) {
  const LauncherEnv& env = f.env;
  // An MPI singleton (a plain `trainer train`) sets PMIX_RANK for itself when MPI starts: no
  // launcher started it, and the line would say one did.
  if (env.kind == LauncherKind::none || (env.kind == LauncherKind::pmi && f.world == 1)) return "";
  std::string line = fmt::format("launcher: {}", launcher_kind_name(env.kind));
  if (env.kind == LauncherKind::srun) line += fmt::format(", Slurm job {}", env.slurm_job);
  else if (!env.slurm_job.empty()) line += fmt::format(" inside Slurm job {}", env.slurm_job);
  line += fmt::format(", {} rank{}; rank 0 is task {}, local rank {} of {} on its node", f.world,
                      f.world == 1 ? "" : "s", env.task_id, f.local_rank, f.local_size);
  const char* local_var = env.kind == LauncherKind::srun ? "SLURM_LOCALID" : "OMPI_COMM_WORLD_LOCAL_RANK";
  if (env.local_id >= 0) line += fmt::format(" ({} {})", local_var, env.local_id);
  if (f.gpu)
    line += fmt::format("; GPU = local rank % visible GPUs (CUDA_VISIBLE_DEVICES {})",
                        f.visible_devices.empty() ? "unset" : excerpt(f.visible_devices));
  if (f.mismatched_ranks > 0)
    line += fmt::format("; note: on {} rank{} (first: rank {}) {} differs from the local rank, which picks the GPU",
                        f.mismatched_ranks, f.mismatched_ranks == 1 ? "" : "s", f.first_mismatch, local_var);
  return line;
}

}  // namespace trainer
