// Every rank of a job must run the same recipe and the same program. Under mpiexec or srun a
// rank can be given other arguments (MPMD lines, per-rank --set, another working directory) or
// another binary; left alone that runs silently with mixed settings, or dies inside MPI on a
// message of the wrong size. check_recipe_agreement compares each rank's resolved recipe
// (recipe_to_yaml) and program version with rank 0's before any work and throws a ConfigError
// on every rank naming the first differing key, both values and the ranks that differ.
#pragma once

#include <string>

#include "app/recipe/recipe.h"
#include "parallel/comm.h"

namespace trainer {

// Collective over world (host buffers).
void check_recipe_agreement(const Recipe& recipe, Comm& world);

// The first line where `mine` (a recipe_to_yaml text) differs from `theirs`, as "key.path:
// their value vs my value"; "" when they are equal. Keys are dotted from the YAML indentation.
std::string first_recipe_difference(const std::string& theirs, const std::string& mine);

}  // namespace trainer
