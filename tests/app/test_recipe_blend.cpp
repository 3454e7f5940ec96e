// data.train, data.val and data.stages as blends: what a list of sources means, how it prints
// and reloads, --set, and every malformed entry refused with its position and what is valid.
#include <doctest/doctest.h>

#include <string>

#include "app/recipe/recipe.h"
#include "app/recipe/recipe_schema.h"
#include "kernels/base/errors.h"
#include "tests/app/test_recipe_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("a list of sources is a blend, a string one source, and both print and reload") {
  const Recipe r = load_recipe_text(
      "data:\n"
      "  train:\n"
      "    - {path: \"web/train_*.bin\", weight: 0.7, name: web}\n"
      "    - {path: \"code/train_*.bin\", weight: 0.3}\n"
      "  val: [{path: \"web/val_*.bin\"}, {path: \"code/val_*.bin\", weight: 2}]\n"
      "  stages:\n"
      "    - {until_step: 100, train: [{path: \"warm/*.bin\"}]}\n"
      "    - {until_step: 900}\n");
  REQUIRE(r.data.train.size() == 2);
  CHECK(r.data.train[0] == BlendSource{"web/train_*.bin", 0.7, "web"});
  CHECK(r.data.train[1] == BlendSource{"code/train_*.bin", 0.3, ""});
  REQUIRE(r.data.val.size() == 2);
  CHECK(r.data.val[0].weight == 1);
  CHECK(r.data.val[1].weight == 2);
  REQUIRE(r.data.stages.size() == 2);
  CHECK(r.data.stages[0] == BlendStage{100, {BlendSource{"warm/*.bin", 1, ""}}});
  CHECK(r.data.stages[1] == BlendStage{900, {}});
  CHECK(key_value_yaml(*find_key("data.train"), r) ==
        "[{path: \"web/train_*.bin\", weight: 0.7, name: \"web\"}, {path: \"code/train_*.bin\", weight: 0.3}]");
  CHECK(key_value_yaml(*find_key("data.stages"), r) ==
        "[{until_step: 100, train: \"warm/*.bin\"}, {until_step: 900}]");
  const Recipe again = load_recipe(write_recipe("recipe_blend", "again.yaml", recipe_to_yaml(r)), {});
  CHECK(again.data.train == r.data.train);
  CHECK(again.data.val == r.data.val);
  CHECK(again.data.stages == r.data.stages);
  CHECK(recipe_to_yaml(again) == recipe_to_yaml(r));
  // One glob prints as a string and reads back as one.
  const Recipe one = load_recipe_text("data: {train: \"a/*.bin,b/*.bin\"}\n");
  CHECK(key_value_yaml(*find_key("data.train"), one) == "\"a/*.bin,b/*.bin\"");
  CHECK(key_value_yaml(*find_key("data.val"), one) == "\"\"");
  CHECK(key_value_yaml(*find_key("data.stages"), one) == "[]");
}

TEST_CASE("--set takes a glob literally and a [list] as YAML") {
  const Recipe r = load_recipe_text("data: {train: t.bin}\n",
                                    {"data.train=[{path: a.bin, weight: 2}, {path: b.bin}]", "data.val=v_*.bin"});
  REQUIRE(r.data.train.size() == 2);
  CHECK(r.data.train[0].weight == 2);
  CHECK(r.data.val == single_source("v_*.bin"));
  CHECK(load_recipe_text("data: {train: t.bin, val: v.bin}\n", {"data.val="}).data.val.empty());
  CHECK(load_recipe_text("data: {train: t.bin}\n", {"data.stages=[{until_step: 5}]"}).data.stages.size() == 1);
}

TEST_CASE("malformed sources and stages are refused with their position and what is valid") {
  struct Bad {
    const char* what;
    std::string text;
    std::string expected;
  };
  const std::vector<Bad> cases = {
      {"empty list", "data: {train: []}\n", "r.yaml:1:15: data.train: the list of sources is empty"},
      {"not a map", "data: {train: [a.bin]}\n", "r.yaml:1:16: data.train: each source is a map, got a.bin"},
      {"no path", "data: {train: [{weight: 2}]}\n", "r.yaml:1:16: data.train: a source needs a path"},
      {"unknown key", "data: {train: [{path: a, wieght: 2}]}\n",
       "data.train: unknown key \"wieght\" in a source (keys: path, weight, name)"},
      {"zero weight", "data: {train: [{path: a, weight: 0}]}\n", "r.yaml:1:34: data.train: weight 0 is not a number > 0"},
      {"negative weight", "data: {train: [{path: a, weight: -1}]}\n", "weight -1 is not a number > 0"},
      {"text weight", "data: {train: [{path: a, weight: lots}]}\n", "weight lots is not a number > 0"},
      {"quoted weight", "data: {train: [{path: a, weight: \"2\"}]}\n", "write it without quotes"},
      {"bad name", "data: {train: [{path: a, name: \"a b\"}]}\n", "name \"a b\" is not [A-Za-z0-9_.-]+"},
      {"same path twice", "data: {train: [{path: a}, {path: a}]}\n", "the path \"a\" is listed twice"},
      {"same name twice", "data: {train: [{path: a, name: x}, {path: b, name: x}]}\n", "the name \"x\" is given twice"},
      {"empty path", "data: {train: [{path: \"\"}]}\n", "a source's path is empty"},
      {"map for sources", "data: {train: {path: a}}\n", "data.train: expected a glob or a list of sources, got a map"},
      {"stage not a list", "data: {train: a, stages: {until_step: 3}}\n", "data.stages: expected a list, got a map"},
      {"stage without until_step", "data: {train: a, stages: [{train: [{path: b}]}]}\n", "a stage needs until_step"},
      {"stage at step 0", "data: {train: a, stages: [{until_step: 0}]}\n", "data.stages: 0 is out of range"},
      {"stages out of order", "data: {train: a, stages: [{until_step: 5}, {until_step: 5}]}\n",
       "until_step 5 does not come after the previous stage's 5"},
      {"stage with an empty mix", "data: {train: a, stages: [{until_step: 5, train: []}]}\n",
       "data.stages: the list of sources is empty"},
      {"stage unknown key", "data: {train: a, stages: [{until: 5}]}\n", "unknown key \"until\" in a stage (keys: until_step, train)"},
  };
  for (const Bad& b : cases) {
    INFO(std::string(b.what));
    const std::string message = load_error(b.text);
    CHECK_MESSAGE(message.find(b.expected) != std::string::npos, std::string(message));
    CHECK_MESSAGE(message.find("valid: ") != std::string::npos, message);
  }
}
