// Cross-field recipe checks (rules that relate several keys) and where each key came from, so
// that their messages can point at a file line or a --set. Used by load_recipe; check_layout
// (world size) is declared in recipe.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/recipe/recipe.h"

namespace trainer {

// Where each key path (and section path) was set: "file:line:column" or "--set k=v".
struct KeyOrigins {
  std::string file;
  std::map<std::string, std::string> where;
  // The place that set `path`, or the file name when the key kept its default.
  std::string of(const std::string& path) const;
  bool has(const std::string& path) const { return where.count(path) != 0; }
};

// Throws ConfigError for the first cross-field rule that `recipe` breaks. `recipe` has its
// defaults filled and train.seq_len resolved.
void check_recipe(const Recipe& recipe, const KeyOrigins& origins);

// Combinations that are allowed but rarely meant, one line each ("lr_schedule: note: ..."),
// printed by train (rank 0) and validate. A warm-up longer than the run is one: it is how
// short debug runs of a production recipe (--set train.steps=5) look, so it is not refused.
std::vector<std::string> recipe_notes(const Recipe& recipe);

}  // namespace trainer
