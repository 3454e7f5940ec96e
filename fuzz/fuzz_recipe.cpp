// Fuzzes the recipe loader: the input is a recipe file's text (YAML, then the schema's type,
// range and cross-field checks, load_recipe_text). Expected: a Recipe or a ConfigError. A
// finding: any other exception, a crash or sanitizer report, a hang, a huge allocation, or a
// loaded recipe whose resolved YAML does not reload to itself (recipe_round_trip.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "app/recipe/recipe.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/recipe_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  trainer::fuzz::expect_ok_or_user_error([&] {
    const trainer::Recipe recipe = trainer::load_recipe_text(text, "fuzz.yaml", {});
    trainer::fuzz::check_recipe_round_trip(recipe);
  });
  return 0;
}
