// Cross-field recipe checks (rules that relate several keys) and where each key came from, so
// that their messages can point at a file line or a --set. Used by load_recipe; check_layout
// (world size) is declared in recipe.h.
#pragma once

#include <map>
#include <string>

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

}  // namespace trainer
