// trainer validate RECIPE [--set k=v]... [--world N]: loads and checks a recipe without touching
// data or devices and prints it fully resolved (every key, defaults filled in) as YAML that
// loads back to the same recipe. With --world it also checks the parallel layout against that
// many ranks. Errors are ConfigErrors (exit code 2).
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/cli_checks.h"
#include "app/cli/commands.h"
#include "app/engine/auto_layout.h"
#include "app/recipe/recipe.h"
#include "app/recipe/recipe_checks.h"

namespace trainer {
namespace {

struct ValidateOptions {
  std::string recipe;
  std::vector<std::string> overrides;
  int world = 0;  // 0 = not given
};

int run_validate(const ValidateOptions& opt) {
  Recipe recipe = load_recipe(opt.recipe, opt.overrides);
  const std::vector<std::string> notes = recipe_notes(recipe);  // of the recipe as written
  std::string auto_text;
  if (recipe.auto_layout()) {
    if (opt.world == 0) {
      std::string text = fmt::format("# {} resolved except parallel's auto degrees, which are chosen for a world "
                                     "size (give --world N to see the choice)\n",
                                     opt.recipe);
      for (const std::string& note : notes) text += "# " + note + "\n";
      text += recipe_to_yaml(recipe);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
    std::vector<std::string> report;
    recipe = resolve_auto_layout(recipe, opt.world, &report);
    for (const std::string& line : report) auto_text += "# " + line + "\n";
  }
  if (opt.world > 0) check_layout(recipe, opt.world);
  std::string text = auto_text + fmt::format("# {} resolved; layout data {} x tensor {} x pipeline {} = {} "
                                 "rank{}{}\n",
                                 opt.recipe, recipe.parallel.data, recipe.parallel.tensor,
                                 recipe.parallel.pipeline, recipe.world(),
                                 recipe.world() == 1 ? "" : "s",
                                 opt.world > 0 ? " (checked against --world)" : "");
  for (const std::string& note : notes) text += "# " + note + "\n";
  text += recipe_to_yaml(recipe);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_validate_command(CLI::App& app, CommandList& commands) {
  auto opt = std::make_shared<ValidateOptions>();
  auto* sub = app.add_subcommand(
      "validate",
      "Check a recipe (keys, types, ranges, cross-field rules) and print it fully resolved as "
      "YAML; touches no data or device");
  sub->add_option("recipe", opt->recipe, "recipe file (YAML); see configs/README.md")->required();
  sub->add_option("--set", opt->overrides,
                  "override one key, section.key=value (repeatable); the value is YAML, e.g. "
                  "train.optimizer.betas=[0.9,0.99]; string keys take the text as is")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--world", opt->world,
                  "also check the layout for this many ranks (data x tensor x pipeline must "
                  "equal it)")
      ->check(int_in(1, kMaxRanks));
  commands.push_back({sub, [opt]() { return run_validate(*opt); }});
}

}  // namespace trainer
