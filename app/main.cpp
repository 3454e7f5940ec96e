// trainer: entry point. Registers the subcommands, parses the command line, runs the chosen
// one. User mistakes (ConfigError, InputError) are printed once, by rank 0, and exit 2;
// internal failures are printed with their origin and, under MPI, abort the whole job so
// that no rank hangs in a collective.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <mpi.h>

#include <cstdio>
#include <exception>

#include "app/commands.h"
#include "kernels/errors.h"

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

}  // namespace

int main(int argc, char** argv) {
  using namespace trainer;
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

  try {
    for (auto& c : commands)
      if (c.sub->parsed()) return c.run();
    std::fprintf(stderr, "error: no subcommand\n");
    return kUserErrorExitCode;
  } catch (const UserError& e) {
    if (launcher_rank() == 0) std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    int finalized = 0, initialized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
    return kUserErrorExitCode;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fatal (rank %d): %s\n", launcher_rank(), e.what());
    std::fflush(stderr);
    abort_job_if_mpi(1);
    return 1;
  }
}
