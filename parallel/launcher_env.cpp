// LauncherEnv (see launcher_env.h): environment variables read once per call, numbers that do
// not parse read as absent.
#include "parallel/launcher_env.h"

#include <cstdlib>

#include "kernels/base/excerpt.h"

namespace trainer {

namespace {

// A non-negative integer, or -1 when absent or not a number.
int int_var(const std::function<const char*(const char*)>& get, const char* name) {
  const char* v = get(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (*end == '\0' && n >= 0 && n <= 1 << 30) ? static_cast<int>(n) : -1;
}

}  // namespace

LauncherEnv launcher_env_from(const std::function<const char*(const char*)>& get) {
  LauncherEnv env;
  // Echoed in reports and messages: control characters escaped.
  const char* job = get("SLURM_JOB_ID");
  const bool in_job = job != nullptr && *job != '\0';
  if (in_job) env.slurm_job = excerpt(job);
  if ((env.task_id = int_var(get, "OMPI_COMM_WORLD_RANK")) >= 0) {
    env.kind = LauncherKind::mpiexec;
    env.local_id = int_var(get, "OMPI_COMM_WORLD_LOCAL_RANK");
    return env;
  }
  // srun: a step of a job. SLURM_PROCID or a step id without a job id (a variable left over in
  // a plain shell) is no Slurm launch, and is not reported as one.
  const char* step = get("SLURM_STEP_ID");
  if (in_job && step != nullptr && *step != '\0' && (env.task_id = int_var(get, "SLURM_PROCID")) >= 0) {
    env.kind = LauncherKind::srun;
    env.local_id = int_var(get, "SLURM_LOCALID");
    env.step_tasks = int_var(get, "SLURM_STEP_NUM_TASKS");
    env.slurm_job += "." + excerpt(step);
    return env;
  }
  for (const char* var : {"PMIX_RANK", "PMI_RANK"}) {
    if ((env.task_id = int_var(get, var)) >= 0) {
      env.kind = LauncherKind::pmi;
      return env;
    }
  }
  return env;
}

LauncherEnv launcher_env() {
  return launcher_env_from([](const char* name) { return std::getenv(name); });
}

const char* launcher_kind_name(LauncherKind kind) {
  switch (kind) {
    case LauncherKind::none: return "none";
    case LauncherKind::mpiexec: return "mpiexec";
    case LauncherKind::srun: return "srun";
    case LauncherKind::pmi: return "PMI";
  }
  return "?";
}

std::string slurm_tag(const LauncherEnv& env) {
  if (env.slurm_job.empty()) return "";
  if (env.kind == LauncherKind::srun) return ", Slurm job " + env.slurm_job + " task " + std::to_string(env.task_id);
  return ", Slurm job " + env.slurm_job;
}

}  // namespace trainer
