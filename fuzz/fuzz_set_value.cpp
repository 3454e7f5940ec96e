// Fuzzes --set overrides: each input line is one "section.key=value" argument applied to a
// small valid recipe (the overrides' YAML values, string literals, key lookup and the checks
// that follow). Expected: a Recipe or a ConfigError. A finding: any other exception, a crash
// or sanitizer report, a hang, a huge allocation, or a resolved recipe that does not reload
// to itself (recipe_round_trip.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/recipe/recipe.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/recipe_round_trip.h"

namespace {

// configs/debug/tiny.yaml, without comments: every section present, so overrides reach
// every key's parser and the cross-field checks.
constexpr const char* kBaseRecipe = R"(model: {n_layer: 2, n_head: 2, d_model: 32, vocab_size: 257, seq_len: 16, vocab_multiple: 64}
train:
  device: cpu
  precision: fp32
  micro_batch: 2
  global_batch: 4
  steps: 4
  seed: 42
  optimizer: {lr: 1.0e-3, weight_decay: 0.0}
  lr_schedule: {kind: constant}
data: {train: "datasets/debug/train_*.bin", val: "datasets/debug/val_*.bin", tokenizer: byte}
eval: {every: 2, batches: 2}
log: {every: 1}
)";

constexpr size_t kMaxOverrides = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  size_t pos = 0;
  while (pos <= input.size() && overrides.size() < kMaxOverrides) {
    size_t eol = input.find('\n', pos);
    if (eol == std::string_view::npos) eol = input.size();
    overrides.emplace_back(input.substr(pos, eol - pos));
    pos = eol + 1;
  }
  trainer::fuzz::expect_ok_or_user_error([&] {
    const trainer::Recipe recipe = trainer::load_recipe_text(kBaseRecipe, "tiny.yaml", overrides);
    trainer::fuzz::check_recipe_round_trip(recipe);
  });
  return 0;
}
