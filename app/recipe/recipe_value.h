// Turning one YAML value into one recipe field, with the strict type and range rules of the
// schema. Shared by the file loader and --set, so both give the same errors.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "app/recipe/recipe.h"
#include "app/recipe/recipe_schema.h"

namespace trainer {

// Where YAML text came from, for messages: a file (positions are file:line:column) or one
// --set argument (every position is that argument).
struct YamlSource {
  std::string file;
  std::string override_arg;  // "train.steps=5" when the text came from --set
  std::string at(const YAML::Mark& mark) const;
};

// Parses `value` as the type of `key`, checks its range or choices and stores it in `recipe`.
// `key_mark` locates the key itself (used when the value has no position, e.g. it is empty).
// Throws ConfigError "<where>: <path>: <problem>; valid: <what is valid>".
void set_key_from_yaml(const KeySpec& key, const YAML::Node& value, const YAML::Mark& key_mark,
                       const YamlSource& source, Recipe& recipe);

// Stores the literal text of a --set into a string key (choices are still checked), or into a
// source list as one glob ("" = none).
void set_string_key(const KeySpec& key, const std::string& text, const YamlSource& source,
                    Recipe& recipe);

}  // namespace trainer
