// Helpers for the recipe tests: write a recipe into a scratch directory and load it.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "app/recipe/recipe.h"
#include "kernels/base/errors.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

// Writes `text` to <scratch>/<name> and returns the path.
inline std::string write_recipe(const std::string& dir_name, const std::string& name,
                                const std::string& text) {
  std::string path = scratch_dir(dir_name) + "/" + name;
  write_text_file(path, text);
  return path;
}

// Each process writes its own directory: ctest runs test cases as parallel processes, and
// scratch_dir empties a directory another one may be reading.
inline Recipe load_recipe_text(const std::string& text,
                               const std::vector<std::string>& overrides = {}) {
  return load_recipe(write_recipe("recipe_text_" + std::to_string(::getpid()), "r.yaml", text), overrides);
}

// The ConfigError message load_recipe throws for `text` (fails the test if none is thrown).
inline std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    load_recipe_text(text, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError for: " << text);
  return "";
}

}  // namespace trainer::testing
