// parallel: auto: how `auto` reads and prints, and choose_auto_layout's choice — the search's
// best fitting layout, deterministic, keeping the fixed degrees and micro_batch, skipping
// layouts a recipe rule refuses (llama k/v heads), refusing when nothing fits.
#include <doctest/doctest.h>

#include <string>

#include "app/engine/auto_layout.h"
#include "app/recipe/recipe.h"
#include "app/recipe/recipe_schema.h"
#include "kernels/base/errors.h"
#include "tests/app/test_recipe_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

const char* kRecipe =
    "model: {n_layer: 4, n_head: 4, d_model: 32, vocab_size: 257, seq_len: 16, vocab_multiple: 64}\n"
    "train: {device: cpu, micro_batch: 2, global_batch: 16}\n"
    "data: {train: t.bin, tokenizer: byte}\n";

}  // namespace

TEST_CASE("parallel: auto sets every degree to auto, prints as auto and reloads") {
  const Recipe r = load_recipe_text(std::string(kRecipe) + "parallel: auto\n");
  CHECK(r.auto_layout());
  CHECK(r.parallel.data == kAutoDegree);
  CHECK(r.parallel.zero == kAutoDegree);
  CHECK(key_value_yaml(*find_key("parallel.tensor"), r) == "auto");
  const Recipe again = load_recipe(write_recipe("auto_layout", "again.yaml", recipe_to_yaml(r)), {});
  CHECK(again.parallel.pipeline == kAutoDegree);
  const Recipe one = load_recipe_text(kRecipe, {"parallel.pipeline=auto"});
  CHECK(one.parallel.pipeline == kAutoDegree);
  CHECK(one.parallel.data == 1);
  CHECK(load_error(kRecipe, {"train.steps=auto"}).find("train.steps: expected an integer") != std::string::npos);
  CHECK(load_error(std::string(kRecipe) + "parallel: manual\n").find("parallel is a section") != std::string::npos);
}

TEST_CASE("choose_auto_layout takes the best fitting layout that keeps the fixed choices") {
  const Recipe r = load_recipe_text(std::string(kRecipe) + "parallel: auto\n");
  const PlanContext ctx = plan_context_for(r, 8, PlanDevice::h100);
  const AutoLayoutChoice a = choose_auto_layout(r, 8, ctx), b = choose_auto_layout(r, 8, ctx);
  REQUIRE(!a.ranked.empty());
  CHECK(a.ranked.front().fits);
  CHECK(a.resolved.world() == 8);
  CHECK(!a.resolved.auto_layout());
  CHECK(a.resolved.parallel.data == b.resolved.parallel.data);
  CHECK(a.resolved.parallel.tensor == b.resolved.parallel.tensor);
  CHECK(a.resolved.parallel.zero == b.resolved.parallel.zero);
  for (size_t i = 1; i < a.ranked.size(); ++i)
    if (a.ranked[i].fits) CHECK(a.ranked[i].time.step_s >= a.ranked.front().time.step_s);
  for (const PlanCandidate& c : a.ranked) CHECK(c.layout.micro_batch == 2);
  const std::vector<std::string> lines = auto_layout_report(a, ctx);
  REQUIRE(lines.size() >= 2);
  CHECK(lines[0].find("parallel: auto chose data ") == 0);

  Recipe fixed = r;
  fixed.parallel.pipeline = 2;
  fixed.parallel.zero = 1;
  const AutoLayoutChoice f = choose_auto_layout(fixed, 8, ctx);
  for (const PlanCandidate& c : f.ranked) {
    CHECK(c.layout.pipeline == 2);
    CHECK(c.layout.zero == 1);
  }
  CHECK(f.resolved.parallel.pipeline == 2);
}

TEST_CASE("choose_auto_layout skips layouts a recipe rule refuses and refuses when nothing fits") {
  // llama with 2 k/v heads: tensor 4 divides n_head 4 but not n_kv_head 2.
  const Recipe llama = load_recipe_text(std::string(kRecipe) + "parallel: auto\n",
                                        {"model.arch=llama", "model.n_kv_head=2", "model.ffn_dim=64"});
  const AutoLayoutChoice c = choose_auto_layout(llama, 4, plan_context_for(llama, 4, PlanDevice::h100));
  for (const PlanCandidate& p : c.ranked) CHECK(p.layout.tensor != 4);
  const Recipe r = load_recipe_text(std::string(kRecipe) + "parallel: auto\n");
  CHECK_THROWS_WITH_AS(choose_auto_layout(r, 8, plan_context_for(r, 8, PlanDevice::h100, 1e-6)),
                       doctest::Contains("none of the"), ConfigError);
  Recipe odd = r;
  odd.train.micro_batch = 3;  // divides no global_batch 16 / data
  CHECK_THROWS_WITH_AS(choose_auto_layout(odd, 8, plan_context_for(odd, 8, PlanDevice::h100)),
                       doctest::Contains("no layout of 8 ranks keeps train.micro_batch 3"), ConfigError);
}
