// The recipe schema: one table row per YAML key (its dotted path, how it is stored in Recipe,
// its valid range or choices, whether it is required, a one-line description). Loading,
// printing and the documentation test all read this table, so a key exists in exactly one
// place. Invariants: rows are in print order and grouped by section; a choice key's names and
// values come from its enum's name table (kernels/enum_names.h), in that table's order;
// default values are those of a default-constructed Recipe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "app/recipe/recipe.h"

namespace trainer {

// How a key is stored: a function returning a reference to its field in a Recipe.
using IntField = int& (*)(Recipe&);
using U64Field = uint64_t& (*)(Recipe&);
using DoubleField = double& (*)(Recipe&);
using FloatField = float& (*)(Recipe&);
using BoolField = bool& (*)(Recipe&);
using StringField = std::string& (*)(Recipe&);
using ChoiceField = uint8_t& (*)(Recipe&);  // an enum with uint8_t storage
using IntListField = std::vector<int>& (*)(Recipe&);
using PairField = std::pair<double*, double*> (*)(Recipe&);  // a 2-element YAML list
// A glob string, or a list of {path, weight, name} maps (data/blend_source.h).
using SourceListField = std::vector<BlendSource>& (*)(Recipe&);
// A list of {until_step, train} maps.
using StageListField = std::vector<BlendStage>& (*)(Recipe&);
using FieldRef = std::variant<IntField, U64Field, DoubleField, FloatField, BoolField, StringField,
                              ChoiceField, IntListField, PairField, SourceListField, StageListField>;

enum class BoundKind : uint8_t { none, closed, open };
struct Bound {
  BoundKind kind = BoundKind::none;
  double value = 0;
};

enum class Presence : uint8_t { optional, required };
enum class TextRule : uint8_t { any, non_empty };  // string keys only
// The model families a key means something for: every one, or llama only (a gpt2 recipe that
// sets it is refused, and printed recipes leave it out).
enum class ArchScope : uint8_t { any, llama };
// Integer keys that also take `auto` (stored as kAutoDegree).
enum class AutoValue : uint8_t { refused, accepted };

struct KeySpec {
  std::string path;  // "train.optimizer.lr"
  FieldRef field;
  Bound lo, hi;                      // numbers; for lists they bound every element
  std::vector<std::string> choices;  // choice keys; a string key with choices accepts only them
  std::vector<uint8_t> choice_values;  // choice keys: choice_values[i] is named choices[i]
  Presence presence = Presence::optional;
  TextRule text_rule = TextRule::any;
  ArchScope arch = ArchScope::any;
  AutoValue auto_value = AutoValue::refused;
  std::string valid_note;  // replaces the generated "valid" text where that would mislead
  std::string description;
};

// What a list of data sources accepts (data.train's valid text).
extern const char kSourcesValid[];

// Every key, in print order.
const std::vector<KeySpec>& recipe_schema();
// Section paths in order of first appearance ("model", ..., "train.optimizer", ...).
std::vector<std::string> recipe_sections();
// The row of a key path, or nullptr.
const KeySpec* find_key(const std::string& path);
bool is_section(const std::string& path);
// Whether `key` applies to `recipe`'s model family (see ArchScope).
bool key_applies(const KeySpec& key, const Recipe& recipe);
// The keys of a section that take `auto` ("parallel: auto" sets them all).
std::vector<const KeySpec*> section_auto_keys(const std::string& section);
// Direct children names (keys and sub-sections) of a section; "" = the top level.
std::vector<std::string> section_children(const std::string& section);

// "integer", "number", "boolean", "string", "choice", "integer list", "number pair",
// "sources", "stages".
std::string key_type_name(const KeySpec& key);
// What is valid, e.g. "integer >= 1", "number in (0, 1]", "one of: gpt2, byte".
std::string key_valid_text(const KeySpec& key);
// The default as YAML text (strings quoted), or "(required)".
std::string key_default_text(const KeySpec& key);
// The key's current value in `recipe` as one YAML flow value (re-loadable).
std::string key_value_yaml(const KeySpec& key, const Recipe& recipe);

// A YAML double-quoted string with escapes.
std::string yaml_quote(const std::string& text);
// A user's value quoted for a message: yaml_quote of its excerpt (kernels/base/excerpt.h), then
// "... (N bytes)" when it was cut.
std::string message_quote(const std::string& text);
// The candidate closest to `name` by edit distance (with transpositions), "" when none is
// close enough to be a plausible typo.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace trainer
