// Every rank of one launcher job must run the same subcommand. An MPMD line can give ranks
// different ones (`train` on one, `validate` on another): `validate` never enters MPI, exits 0
// and leaves `train` waiting in MPI_Init until the launcher gives up; `train` beside `bench`
// disagrees on defaults and blames a recipe key. So before anything else, under a launcher
// with several ranks, MPI starts and the ranks compare their subcommands (the path of names,
// "ckpt export"). Recipes and program versions are compared later (recipe_agreement.h).
#pragma once

#include <string>

namespace trainer {

// Collective under a launcher (a no-op for one process). Returns 0 when every rank runs
// `command`; otherwise rank 0 prints one error naming each rank's subcommand and every rank
// returns 2. MPI stays initialized either way: main finalizes it.
int check_command_agreement(const std::string& command);

}  // namespace trainer
