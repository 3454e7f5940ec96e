// trainer: entry point. Registers the subcommands, parses the command line, runs the chosen
// one (under a launcher, once the ranks agree on which: command_agreement.h). User mistakes
// (ConfigError, InputError) are printed once, by rank 0, and exit 2;
// internal failures are printed with their origin and, under MPI, abort the whole job so
// that no rank hangs in a collective.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "app/cli/command_agreement.h"
#include "app/cli/commands.h"
#include "app/recipe/recipe.h"
#include "kernels/base/errors.h"
#include "parallel/launcher_env.h"
#include "parallel/mpi_runtime.h"

namespace {

void abort_job_if_mpi(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }
}

// MPI may have been started here (check_command_agreement) rather than by the command's
// MpiRuntime, which then leaves it running: finalize it before exiting with `code`.
int end_mpi(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
  return code;
}

// OpenBLAS 0.3.21 (Debian 12) does not recognise recent AVX-512 CPUs (Sapphire Rapids in a
// VM, for one) and falls back to its Haswell kernels, about half the sgemm speed of its
// SkylakeX ones on the same core. It picks its kernels when the library loads, from
// OPENBLAS_CORETYPE, so when the user has not set it and the CPU has the AVX-512 subsets the
// SkylakeX kernels use, set it and re-execute this same program once, before MPI starts.
void select_openblas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512cd");
  setenv("OPENBLAS_CORETYPE", avx512 ? "SkylakeX" : "", 1);
  if (!avx512) return;
  execv("/proc/self/exe", argv);
  // execv only returns on failure: carry on with the kernels already loaded.
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainer;
  select_openblas_kernels(argv);
  // CLI11 answers --version as soon as it sees it and ignores the rest of the line.
  if (argc > 2 && std::string(argv[1]) == "--version") {
    std::fprintf(stderr, "error: --version takes no arguments (got '%s'); run `trainer --version` alone\n", argv[2]);
    return kUserErrorExitCode;
  }
  CLI::App app{"trainer: train GPT-style transformers from a YAML recipe (CPU or CUDA, "
               "data/tensor/pipeline parallel, ZeRO 1-3)"};
  app.set_version_flag("--version", std::string("trainer ") + TRAINER_VERSION);
  app.require_subcommand(1);
  CommandList commands;
  add_train_command(app, commands);
  add_validate_command(app, commands);
  add_bench_command(app, commands);
  add_plan_command(app, commands);
  add_data_command(app, commands);
  add_sample_command(app, commands);
  add_ckpt_command(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kUserErrorExitCode;
  }

  // The subcommand's path of names ("ckpt export"), for the ranks to compare.
  std::string command;
  for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    command += (command.empty() ? "" : " ") + sub->get_name();
  }
  try {
    if (const int rc = check_command_agreement(command); rc != 0) return end_mpi(rc);
    for (auto& c : commands)
      if (c.sub->parsed()) return end_mpi(c.run());
    std::fprintf(stderr, "error: no subcommand\n");
    return kUserErrorExitCode;
  } catch (const UserError& e) {
    int finalized = 0, initialized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    // Under a launcher the ranks end together through MPI, so that rank 0 has printed before
    // any rank exits: the launcher kills the whole job at the first non-zero exit, and rank 0
    // printing from here alone lost that race under load.
    if (under_launcher() && !finalized) {
      int rc = kUserErrorExitCode;
      {
        MpiRuntime mpi(ParallelConfig{}.timeout_s);  // no recipe was read: the default
        rc = mpi.end_with_user_error(e.what());
      }
      return end_mpi(rc);
    }
    if (launcher_rank() == 0) std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    if (initialized && !finalized) MPI_Finalize();
    return kUserErrorExitCode;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fatal (rank %d%s): %s\n", launcher_rank(), slurm_tag(launcher_env()).c_str(), e.what());
    std::fflush(stderr);
    abort_job_if_mpi(1);
    return 1;
  }
}
