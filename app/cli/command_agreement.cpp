// Subcommand agreement across ranks (see command_agreement.h).
#include "app/cli/command_agreement.h"

#include <fmt/core.h>
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "app/cli/commands.h"
#include "app/recipe/recipe.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"
#include "parallel/comm_text.h"
#include "parallel/mpi_comm.h"

namespace trainer {

int check_command_agreement(const std::string& command) {
  if (!under_launcher()) return 0;
  int initialized = 0;
  TRAINER_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    TRAINER_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  }
  // No recipe is read yet: its default timeout bounds the wait for a rank that never comes.
  MpiComm world(MPI_COMM_WORLD, "world", ParallelConfig{}.timeout_s);
  if (world.size() == 1) return 0;
  // Names are short ("ckpt export"): a small slot holds any.
  const std::vector<std::string> commands = all_gather_short_texts(world, command, 64);
  auto command_of = [&](int r) { return commands[size_t(r)]; };
  std::string differing, runs = "rank 0 runs `trainer " + excerpt(command_of(0)) + "`";
  for (int r = 1; r < world.size(); ++r) {
    if (command_of(r) == command_of(0)) continue;
    differing += (differing.empty() ? "" : ", ") + std::to_string(r);
    if (runs.find("`trainer " + excerpt(command_of(r)) + "`") == std::string::npos)
      runs += fmt::format(", rank {} runs `trainer {}`", r, excerpt(command_of(r)));
  }
  if (differing.empty()) return 0;
  if (world.rank() == 0) {
    std::fprintf(stderr,
                 "error: the ranks of this job run different commands: %s; ranks differing from rank 0: %s; every "
                 "rank of one job must run the same command (check the MPMD lines of mpiexec, or srun's "
                 "--multi-prog file)\n",
                 runs.c_str(), differing.c_str());
    std::fflush(stderr);
  }
  return kUserErrorExitCode;
}

}  // namespace trainer
