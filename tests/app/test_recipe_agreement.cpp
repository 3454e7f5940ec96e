// first_recipe_difference (app/engine/recipe_agreement.h): the first differing line of two
// recipe_to_yaml texts, named by its dotted key, rank 0's value first.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "app/engine/recipe_agreement.h"

namespace trainer {
namespace {

TEST_CASE("recipe agreement: the first differing key, dotted from the indentation") {
  const std::string base =
      "program_version: 0.1.0\nmodel:\n  n_layer: 2\ntrain:\n  seed: 1\n  optimizer:\n    lr: 0.001\ncheckpoint:\n  dir: \"a\"\n";
  struct Row {
    const char* what;
    std::string mine, want;
  };
  const std::vector<Row> rows = {
      {"the same text", base, ""},
      {"a nested value", "program_version: 0.1.0\nmodel:\n  n_layer: 2\ntrain:\n  seed: 1\n  optimizer:\n    lr: 0.002\ncheckpoint:\n  dir: \"a\"\n",
       "train.optimizer.lr: 0.001 vs 0.002"},
      {"a key after a nested map", "program_version: 0.1.0\nmodel:\n  n_layer: 2\ntrain:\n  seed: 1\n  optimizer:\n    lr: 0.001\ncheckpoint:\n  dir: \"b\"\n",
       "checkpoint.dir: \"a\" vs \"b\""},
      {"the program version", "program_version: 0.2.0\n" + base.substr(base.find('\n') + 1), "program_version: 0.1.0 vs 0.2.0"},
      {"a shorter text", "program_version: 0.1.0\nmodel:\n  n_layer: 2\n", "train vs (end of recipe) (different keys)"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    CHECK(first_recipe_difference(base, r.mine) == r.want);
  }
}

}  // namespace
}  // namespace trainer
