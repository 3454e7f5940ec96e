// Subcommands of the trainer binary. Each add_*_command registers its CLI11 subcommand and
// options on `app` and appends the function that runs it. Run functions return the exit code;
// a user mistake is thrown as ConfigError/InputError and main turns it into exit code 2.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace trainer {

struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};
using CommandList = std::vector<Command>;

void add_train_command(CLI::App& app, CommandList& commands);
void add_validate_command(CLI::App& app, CommandList& commands);
void add_data_command(CLI::App& app, CommandList& commands);
void add_sample_command(CLI::App& app, CommandList& commands);
void add_ckpt_command(CLI::App& app, CommandList& commands);
void add_bench_command(CLI::App& app, CommandList& commands);
void add_plan_command(CLI::App& app, CommandList& commands);

// The rank this process has under a launcher (mpirun, srun), read from the environment
// before MPI starts; 0 for a plain process. Used to print user errors once.
int launcher_rank();
// Whether a launcher started this process as one rank of several.
bool under_launcher();

}  // namespace trainer
