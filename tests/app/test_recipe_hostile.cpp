// Recipe values without meaning (issue 15): explicit YAML tags on sections, lists, keys and the
// recipe itself are refused as on scalars, naming file:line:column and what is valid; long
// values are quoted in messages as a 60-byte excerpt with their length; a warm-up longer than
// the run is allowed with a note naming both values.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "app/recipe/recipe.h"
#include "app/recipe/recipe_checks.h"
#include "kernels/base/errors.h"
#include "tests/app/test_recipe_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

struct TagRow {
  const char* name;
  const char* recipe;
  std::vector<std::string> overrides;
  const char* says;
};

const TagRow kTagRows[] = {
    {"core map tag on a section", "data: {train: x}\ntrain: !!map {steps: 2}\n", {},
     "r.yaml:2:8: section train: explicit YAML tag tag:yaml.org,2002:map is not supported; write it without the "
     "tag; valid: a plain map of the keys device, "},
    {"custom tag on a block section", "data: {train: x}\ntrain: !mine\n  steps: 2\n", {},
     "section train: explicit YAML tag !mine is not supported"},
    {"tag on a nested section", "data: {train: x}\ntrain:\n  optimizer: !!map {lr: 0.1}\n", {},
     "r.yaml:3:14: section train.optimizer: explicit YAML tag tag:yaml.org,2002:map"},
    {"core seq tag on a pair", "data: {train: x}\ntrain: {optimizer: {betas: !!seq [0.9, 0.95]}}\n", {},
     "train.optimizer.betas: explicit YAML tag tag:yaml.org,2002:seq is not supported; write the plain list; valid:"},
    {"custom tag on an integer list", "data: {train: x}\nmodel: {n_layer: 2}\nparallel: {pipeline: 2, stages: !x [1, 1]}\n",
     {}, "parallel.stages: explicit YAML tag !x is not supported; write the plain list"},
    {"tag on a key", "data: {train: x}\ntrain:\n  !!str steps: 2\n", {},
     "r.yaml:3:3: key \"steps\": explicit YAML tag tag:yaml.org,2002:str is not supported; write it without the "
     "tag; valid: a plain key: device, "},
    {"tag on the whole recipe", "!!map\ndata: {train: x}\n", {},
     "the recipe: explicit YAML tag tag:yaml.org,2002:map is not supported; write it without the tag; valid: a "
     "plain map of the sections model, "},
    {"tag on a section through --set", "data: {train: x}\n", {"train.optimizer=!!map {lr: 0.1}"},
     "--set train.optimizer=!!map {lr: 0.1}: section train.optimizer: explicit YAML tag tag:yaml.org,2002:map"},
    {"tag on a list through --set", "data: {train: x}\n", {"train.optimizer.betas=!!seq [0.9, 0.95]"},
     "train.optimizer.betas: explicit YAML tag tag:yaml.org,2002:seq is not supported"},
    {"tag on a scalar, as before", "data: {train: x}\ntrain: {steps: !!int 2}\n", {},
     "train.steps: explicit YAML tag tag:yaml.org,2002:int is not supported; write the plain value"},
};

}  // namespace

TEST_CASE("recipe: explicit YAML tags on sections, lists, keys and the recipe are refused like those on values") {
  for (const TagRow& row : kTagRows) {
    CAPTURE(row.name);
    const std::string msg = load_error(row.recipe, row.overrides);
    CHECK_MESSAGE(msg.find(row.says) != std::string::npos, msg);
  }
  // Untagged, anchored and quoted forms still load.
  CHECK(load_recipe_text("data: {train: x}\ntrain: &t {steps: 2}\n").train.steps == 2);
  CHECK(load_recipe_text("data: {train: 'x'}\n\"train\": {optimizer: {betas: [0.8, 0.9]}}\n").train.optimizer.beta1 ==
        doctest::Approx(0.8));
}

TEST_CASE("recipe: a long value is quoted as its first 60 bytes and its length") {
  const std::string a60(60, 'a');
  const std::string huge(3 << 20, 'a');
  struct Row {
    const char* name;
    std::string recipe;
    std::vector<std::string> overrides;
    std::string says;
  };
  const Row rows[] = {
      {"unknown choice in the file", "data: {train: x, tokenizer: " + huge + "}\n", {},
       "data.tokenizer: unknown tokenizer \"" + a60 + "\"... (3145728 bytes): neither gpt2 nor byte"},
      // YAML caps an implicit key at 1024 characters.
      {"unknown key in the file", "data: {train: x}\ntrain: {" + std::string(1000, 'a') + ": 1}\n", {},
       "unknown key \"" + a60 + "\"... (1000 bytes) in section train"},
      {"a number out of range", "data: {train: x}\ntrain: {steps: " + std::string(100000, '9') + "}\n", {},
       "train.steps: " + std::string(60, '9') + "... (100000 bytes) is out of range"},
      {"a --set value", "data: {train: x}\n", {"train.device=" + std::string(100000, 'a')},
       "--set train.device=" + std::string(47, 'a') + "... (100013 bytes): train.device: unknown value \"" + a60 +
           "\"... (100000 bytes)"},
      {"an unknown --set key", "data: {train: x}\n", {"train." + std::string(100000, 'k') + "=1"},
       "(100008 bytes): unknown key train." + std::string(54, 'k') + "... (100006 bytes)"},
      {"a section given a scalar", "data: {train: x}\ntrain: " + huge + "\n", {},
       "got the value " + a60 + "... (3145728 bytes)"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    const std::string msg = load_error(row.recipe, row.overrides);
    CHECK_MESSAGE(msg.find(row.says) != std::string::npos, msg);
    CHECK(msg.size() < 1024);
  }
}

TEST_CASE("recipe_notes: a warm-up longer than the run is noted with both values, otherwise nothing") {
  Recipe r = load_recipe_text("data: {train: x}\ntrain: {steps: 5, lr_schedule: {warmup_steps: 20}}\n");
  const std::vector<std::string> notes = recipe_notes(r);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "lr_schedule: note: train.lr_schedule.warmup_steps 20 is more than train.steps 5: the run ends during "
        "warm-up, at 0.25 of train.optimizer.lr, and the cosine schedule never starts (valid without this note: "
        "warmup_steps <= 5)");
  for (int warmup : {0, 4, 5}) {
    r.train.lr_schedule.warmup_steps = warmup;
    CHECK(recipe_notes(r).empty());
  }
}
