// Shared by the recipe harnesses: a recipe that loads must reload from its resolved YAML (the
// text a checkpoint manifest stores and a resume reads back) to the same resolved YAML, and
// pass the layout check for its own world size. A failure aborts: it is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/recipe/recipe.h"
#include "kernels/base/errors.h"

namespace trainer::fuzz {

inline void check_recipe_round_trip(const Recipe& recipe) {
  check_layout(recipe, recipe.world());
  const std::string yaml = recipe_to_yaml(recipe);
  std::string again;
  try {
    again = recipe_to_yaml(load_recipe_text(yaml, "resolved.yaml", {}));
  } catch (const UserError& e) {
    std::fprintf(stderr, "finding: the resolved recipe does not reload: %s\n--- resolved:\n%s\n", e.what(),
                 yaml.c_str());
    std::abort();
  }
  if (again != yaml) {
    std::fprintf(stderr, "finding: the resolved recipe changes on reload\n--- first:\n%s\n--- again:\n%s\n",
                 yaml.c_str(), again.c_str());
    std::abort();
  }
}

}  // namespace trainer::fuzz
