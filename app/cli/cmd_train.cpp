// trainer train RECIPE [--set k=v]...: load and check the recipe, then train.
#include "app/cli/cli_checks.h"
#include "app/cli/commands.h"
#include "app/engine/train_loop.h"
#include "app/recipe/recipe.h"

namespace trainer {

void add_train_command(CLI::App& app, CommandList& commands) {
  auto* sub = app.add_subcommand("train", "Train a model from a YAML recipe (run under mpirun/srun for several ranks)");
  auto recipe_path = std::make_shared<std::string>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  sub->add_option("recipe", *recipe_path, "Recipe file (YAML); see configs/README.md")->required();
  sub->add_option("--set", *overrides, "Override a recipe key, e.g. --set train.steps=100 (repeatable)");
  auto stop_at = std::make_shared<int64_t>(0);
  sub->add_option("--stop-at", *stop_at,
                  "Stop after this step, writing a checkpoint when checkpoint.dir is set; the learning-rate "
                  "schedule still spans train.steps (for splitting a run over several jobs)")
      ->check(int_in(1, int64_t(1) << 62));
  commands.push_back({sub, [recipe_path, overrides, stop_at]() {
                        Recipe recipe = load_recipe(*recipe_path, *overrides);
                        return run_training(recipe, *stop_at);
                      }});
}

}  // namespace trainer
