// The recipe schema against its documentation (configs/README.md) and its own invariants.
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/recipe/recipe.h"
#include "app/recipe/recipe_schema.h"
#include "tests/app/test_recipe_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

struct DocRow {
  std::string path, type, default_text, valid, description;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// A `code` cell without its backticks.
std::string uncode(const std::string& cell) {
  std::string t = trim(cell);
  if (t.size() >= 2 && t.front() == '`' && t.back() == '`') return t.substr(1, t.size() - 2);
  return t;
}

// The rows of the tables under "## Keys": "### `section`" headings, then
// "| `key` | type | `default` | valid | description |".
std::vector<DocRow> readme_rows(const std::string& text) {
  std::vector<DocRow> rows;
  std::istringstream in(text);
  std::string line, section;
  bool in_keys = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_keys = line == "## Keys";
    if (!in_keys) continue;
    if (line.rfind("### ", 0) == 0) section = uncode(line.substr(4));
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream cells_in(line.substr(1));
    while (std::getline(cells_in, cell, '|')) cells.push_back(cell);
    REQUIRE_MESSAGE(cells.size() >= 5, line);
    rows.push_back({section + "." + uncode(cells[0]), trim(cells[1]), uncode(cells[2]),
                    trim(cells[3]), trim(cells[4])});
  }
  return rows;
}

std::string expected_row(const KeySpec& k) {
  return "| `" + k.path.substr(k.path.rfind('.') + 1) + "` | " + key_type_name(k) + " | `" +
         key_default_text(k) + "` | " + key_valid_text(k) + " | " + k.description + " |";
}

}  // namespace

TEST_CASE("configs/README.md documents exactly the schema's keys, types, defaults and ranges") {
  const std::vector<DocRow> rows = readme_rows(read_text_file(source_dir() + "/configs/README.md"));
  const std::vector<KeySpec>& schema = recipe_schema();
  CHECK(rows.size() == schema.size());
  std::set<std::string> documented;
  for (const DocRow& row : rows) {
    documented.insert(row.path);
    const KeySpec* key = find_key(row.path);
    CHECK_MESSAGE(key != nullptr, "README documents " << row.path << ", which the schema lacks");
    if (!key) continue;
    INFO(row.path << " should read: " << expected_row(*key));
    CHECK(row.type == key_type_name(*key));
    CHECK(row.default_text == key_default_text(*key));
    CHECK(row.valid == key_valid_text(*key));
    CHECK_FALSE(row.description.empty());
  }
  for (const KeySpec& k : schema)
    CHECK_MESSAGE(documented.count(k.path) == 1,
                  "README lacks " << k.path << "; add under its section: " << expected_row(k));
}

TEST_CASE("the README example is a valid recipe") {
  const std::string text = read_text_file(source_dir() + "/configs/README.md");
  size_t start = text.find("```yaml\n");
  REQUIRE(start != std::string::npos);
  start += 8;
  size_t end = text.find("```", start);
  REQUIRE(end != std::string::npos);
  Recipe r = load_recipe_text(text.substr(start, end - start));
  CHECK(r.model.n_layer == 4);
  CHECK(r.grad_accum() == 2);
}

TEST_CASE("schema rows are unique, grouped by section, and described") {
  std::set<std::string> paths;
  std::vector<std::string> sections = recipe_sections();
  CHECK(sections == std::vector<std::string>{"model", "model.rope_scaling", "parallel", "train", "train.optimizer",
                                             "train.lr_schedule", "train.spike", "data", "eval", "checkpoint",
                                             "log"});
  std::string previous_section;
  std::set<std::string> closed;
  for (const KeySpec& k : recipe_schema()) {
    INFO(k.path);
    CHECK(paths.insert(k.path).second);
    CHECK_FALSE(k.description.empty());
    CHECK_FALSE(is_section(k.path));
    std::string section = k.path.substr(0, k.path.rfind('.'));
    if (section != previous_section) {
      CHECK(closed.count(section) == 0);  // a section's keys are contiguous
      closed.insert(previous_section);
      previous_section = section;
    }
    CHECK(key_valid_text(k).find("  ") == std::string::npos);
  }
  CHECK(section_children("") ==
        std::vector<std::string>{"model", "parallel", "train", "data", "eval", "checkpoint", "log"});
  std::vector<std::string> train = section_children("train");
  CHECK(train.back() == "spike");
  CHECK(find_key("train.optimizer") == nullptr);
  CHECK(is_section("train.optimizer"));
}

TEST_CASE("defaults are the default Recipe's values and satisfy their own ranges") {
  const Recipe d;
  CHECK(key_default_text(*find_key("model.n_layer")) == "12");
  CHECK(key_default_text(*find_key("train.optimizer.betas")) == "[0.9, 0.95]");
  CHECK(key_default_text(*find_key("train.optimizer.lr")) == "0.0006");
  CHECK(key_default_text(*find_key("data.train")) == "(required)");
  CHECK(key_default_text(*find_key("log.sample_prompt")) == "\"\\n\"");
  CHECK(key_default_text(*find_key("parallel.schedule")) == "1f1b");
  CHECK(key_value_yaml(*find_key("train.device"), d) == "auto");
  // Loading a recipe that spells out every default changes nothing.
  std::string all_defaults = recipe_to_yaml(load_recipe_text("data: {train: x}\n"));
  CHECK(recipe_to_yaml(load_recipe_text(all_defaults)) == all_defaults);
  std::string llama_defaults = recipe_to_yaml(load_recipe_text("model: {arch: llama}\ndata: {train: x}\n"));
  CHECK(llama_defaults.find("n_kv_head: 0") != std::string::npos);
  CHECK(recipe_to_yaml(load_recipe_text(llama_defaults)) == llama_defaults);
}

TEST_CASE("closest_name suggests plausible typos only") {
  const std::vector<std::string> keys = {"n_layer", "n_head", "d_model", "vocab_size", "seq_len"};
  CHECK(closest_name("n_layers", keys) == "n_layer");
  CHECK(closest_name("nlayer", keys) == "n_layer");
  CHECK(closest_name("n_haed", keys) == "n_head");  // a swap counts as one edit
  CHECK(closest_name("vocab", keys) == "vocab_size");  // prefix
  CHECK(closest_name("seqlen", keys) == "seq_len");
  CHECK(closest_name("learning_rate", keys) == "");
  CHECK(closest_name("x", keys) == "");
}

TEST_CASE("yaml_quote escapes what YAML double quotes need") {
  CHECK(yaml_quote("plain") == "\"plain\"");
  CHECK(yaml_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(yaml_quote("\n\t\x01") == "\"\\n\\t\\x01\"");
  CHECK(yaml_quote("é") == "\"é\"");
}
