// load_recipe: reads a recipe file strictly and applies --set overrides. Order: raw bytes
// (readable, UTF-8, no control characters) -> YAML parse (one document, a map) -> walk every
// map checking keys against the schema (unknown keys with a suggestion, duplicates, which
// yaml-cpp would otherwise silently resolve) -> --set -> required keys -> model.from (the keys
// of an HF folder's config.json) -> resolve defaults that depend on other keys -> cross-field
// checks. Nothing here touches data or devices but model.from's config.json.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "app/recipe/recipe_from_hf.h"
#include "app/recipe/recipe.h"
#include "app/recipe/recipe_checks.h"
#include "app/recipe/recipe_schema.h"
#include "app/recipe/recipe_value.h"
#include "app/recipe/yaml_documents.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"
#include "kernels/base/regular_file.h"

namespace trainer {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

std::string child_path(const std::string& section, const std::string& name) {
  return section.empty() ? name : section + "." + name;
}

// A recipe is a page of YAML; anything near this is a mistake (or an attack on memory).
constexpr int64_t kMaxRecipeBytes = int64_t(4) << 20;

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(fmt::format("{}: is a directory; give a recipe file (.yaml)", path));
  if (!std::filesystem::exists(path, ec))
    throw ConfigError(fmt::format("{}: cannot open the recipe file (does it exist?)", path));
  try {
    return read_regular_file(path, "recipe file", kMaxRecipeBytes);
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
}

// Length of the UTF-8 sequence starting at text[i], or 0 when it is not valid UTF-8
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(const std::string& text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  unsigned char c1 = byte(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 >= 0xA0) return 0;  // UTF-16 surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 >= 0x90) return 0;  // above U+10FFFF
  return n;
}

// Where recipe text comes from: a file (positions are line and column) or one --set argument.
enum class TextOrigin : uint8_t { file, set_argument };

// Rejects bytes that are not UTF-8 text before yaml-cpp sees them, naming line and column.
void check_text_bytes(const std::string& text, const std::string& origin_name, TextOrigin origin) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t n = utf8_sequence_length(text, i);
    bool control = c < 0x20 && c != '\n' && c != '\t' && c != '\r';
    if (n == 0 || control || c == 0x7f) {
      std::string where = origin == TextOrigin::file
                              ? fmt::format("{}:{}:{}", origin_name, line, i - line_start + 1)
                              : "--set " + excerpt(origin_name);
      throw ConfigError(fmt::format(
          "{}: byte 0x{:02x} is {}; a recipe must be UTF-8 text without control characters",
          where, c, n == 0 ? "not valid UTF-8" : "a control character"));
    }
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    }
    i += n;
  }
}

// A recipe means what it says: an explicit tag (!!map, !!str, !custom) would be ignored by
// the reader, so on a map, a list or a key it is refused like one on a value. "?" is the
// non-specific tag of untagged nodes, "!" that of quoted scalars.
void check_untagged(const YAML::Node& node, const std::string& where, const std::string& what,
                    const std::string& valid) {
  const std::string& tag = node.Tag();
  if (tag.empty() || tag == "?" || (tag == "!" && node.IsScalar())) return;
  throw ConfigError(fmt::format("{}: {}: explicit YAML tag {} is not supported; write it without the tag; valid: {}",
                                where, what, excerpt(tag), valid));
}

// The keys and sections whose last name is `leaf` ("lr": train.optimizer.lr), in schema order.
std::vector<std::string> paths_named(const std::string& leaf) {
  std::vector<std::string> out;
  for (const KeySpec& k : recipe_schema())
    if (k.path.substr(k.path.rfind('.') + 1) == leaf) out.push_back(k.path);
  for (const std::string& s : recipe_sections())
    if (s.substr(s.rfind('.') + 1) == leaf) out.push_back(s);
  return out;
}

[[noreturn]] void unknown_key(const std::string& name, const std::string& section,
                              const std::string& where) {
  std::vector<std::string> siblings = section_children(section);
  std::string hint = closest_name(name, siblings);
  if (!hint.empty()) {
    hint = child_path(section, hint);
  } else {
    // Maybe the key is valid but in another section ("lr" at the top of train).
    const std::vector<std::string> elsewhere = paths_named(name);
    if (!elsewhere.empty()) hint = elsewhere.front();
  }
  throw ConfigError(fmt::format("{}: unknown key {} in {}; {}valid keys here: {}", where,
                                message_quote(name),
                                section.empty() ? std::string("the top level") : "section " + section,
                                hint.empty() ? "" : "did you mean " + hint + "? ", join(siblings)));
}

class RecipeReader {
 public:
  RecipeReader(Recipe& recipe, KeyOrigins& origins) : recipe_(recipe), origins_(origins) {}

  // Reads the keys of one section map (the whole document when section is "").
  void read_section(const YAML::Node& map, const std::string& section, const YamlSource& source) {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      if (!key.IsScalar())
        throw ConfigError(fmt::format("{}: a key must be a name, not {}; valid keys here: {}",
                                      source.at(key.Mark()), key.IsMap() ? "a map" : "a list",
                                      join(section_children(section))));
      check_untagged(key, source.at(key.Mark()), "key " + message_quote(key.Scalar()),
                     "a plain key: " + join(section_children(section)));
      const std::string& name = key.Scalar();
      // Dotted keys would give a second spelling of nested ones and dodge duplicate checks.
      if (name.find('.') != std::string::npos)
        throw ConfigError(fmt::format("{}: key {} contains a dot; write sections as nested maps, "
                                      "e.g. train: {{optimizer: {{lr: 0.001}}}}",
                                      source.at(key.Mark()), message_quote(name)));
      const std::string path = child_path(section, name);
      auto first = seen.find(name);
      if (first != seen.end())
        throw ConfigError(fmt::format("{}: duplicate key {} (first set at line {}); each key may "
                                      "appear once",
                                      source.at(key.Mark()), path, first->second.line + 1));
      seen.emplace(name, key.Mark());
      read_entry(path, key.Mark(), value, source);
    }
  }

  // One key path with its YAML value: a section (map) or a single key.
  void read_entry(const std::string& path, const YAML::Mark& key_mark, const YAML::Node& value,
                  const YamlSource& source) {
    const size_t dot = path.rfind('.');
    const std::string section = dot == std::string::npos ? "" : path.substr(0, dot);
    if (is_section(path)) {
      origins_.where[path] = source.at(key_mark);
      if (value.IsNull()) return;  // "eval:" with nothing under it: all defaults
      const std::vector<const KeySpec*> auto_keys = section_auto_keys(path);
      if (!auto_keys.empty() && value.IsScalar() && value.Tag() == "?" && value.Scalar() == "auto") {
        for (const KeySpec* k : auto_keys) {  // "parallel: auto": every degree is chosen at start
          set_key_from_yaml(*k, value, key_mark, source, recipe_);
          origins_.where[k->path] = source.at(value.Mark());
        }
        return;
      }
      if (!value.IsMap())
        throw ConfigError(fmt::format("{}: {} is a section and takes a map of keys, got {}; "
                                      "valid keys: {}",
                                      source.at(value.Mark()), path,
                                      value.IsSequence() ? "a list" : "the value " + excerpt(value.Scalar()),
                                      join(section_children(path))));
      check_untagged(value, source.at(value.Mark()), "section " + path,
                     "a plain map of the keys " + join(section_children(path)));
      read_section(value, path, source);
      return;
    }
    const KeySpec* key = find_key(path);
    if (!key) unknown_key(path.substr(dot + 1), section, source.at(key_mark));
    set_key_from_yaml(*key, value, key_mark, source, recipe_);
    origins_.where[path] = source.at(value.IsDefined() && !value.IsNull() ? value.Mark() : key_mark);
  }

  // "--set section.key=value": the value is YAML (a scalar, [list] or {map}), except that a
  // string key takes the text literally unless it starts with a quote.
  void apply_override(const std::string& arg) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError(fmt::format("--set {}: expected section.key=value, e.g. --set train.steps=100",
                                    excerpt(arg)));
    const std::string path = arg.substr(0, eq);
    const std::string text = arg.substr(eq + 1);
    check_text_bytes(arg, arg, TextOrigin::set_argument);
    YamlSource source{origins_.file, arg};
    const KeySpec* key = find_key(path);
    if (!key && !is_section(path)) {
      // A key of the right name in another section first ("train.lr": train.optimizer.lr), then
      // the closest spelling of the whole path.
      std::string hint;
      const std::vector<std::string> named = paths_named(path.substr(path.rfind('.') + 1));
      if (!named.empty()) {
        hint = fmt::format("{}", fmt::join(named, " or "));
      } else {
        std::vector<std::string> all = recipe_sections();
        for (const KeySpec& k : recipe_schema()) all.push_back(k.path);
        hint = closest_name(path, all);
      }
      throw ConfigError(fmt::format("--set {}: unknown key {}; {}keys are section.key as listed in "
                                    "configs/README.md",
                                    excerpt(arg), excerpt(path), hint.empty() ? "" : "did you mean " + hint + "? "));
    }
    // A source list reads as YAML only when it is written as a list.
    const bool literal_string = key && std::holds_alternative<StringField>(key->field);
    const bool literal_sources = key && std::holds_alternative<SourceListField>(key->field) &&
                                 (text.empty() || text[0] != '[');
    bool literal = (literal_string || literal_sources) && (text.empty() || (text[0] != '"' && text[0] != '\''));
    if (literal) {
      set_string_key(*key, text, source, recipe_);
      origins_.where[path] = source.at(YAML::Mark::null_mark());
      return;
    }
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(fmt::format("--set {}: the value is not valid YAML ({})", excerpt(arg), e.msg));
    }
    read_entry(path, YAML::Mark::null_mark(), value, source);
  }

 private:
  Recipe& recipe_;
  KeyOrigins& origins_;
};

YamlDocuments parse_documents(const std::string& text, const std::string& path) {
  try {
    return read_yaml_documents(text);
  } catch (const YAML::Exception& e) {
    std::string where = e.mark.is_null() ? path
                                         : fmt::format("{}:{}:{}", path, e.mark.line + 1, e.mark.column + 1);
    throw ConfigError(fmt::format("{}: YAML syntax error: {}", where, e.msg));
  }
}

void check_required(const KeyOrigins& origins) {
  for (const KeySpec& k : recipe_schema()) {
    if (k.presence != Presence::required || origins.has(k.path)) continue;
    const std::string section = k.path.substr(0, k.path.rfind('.'));
    if (!origins.has(section))
      throw ConfigError(fmt::format("{}: section {} is missing; {} is required: {}",
                                    origins.file, section, k.path, k.description));
    throw ConfigError(fmt::format("{}: section {} lacks the required key {}: {}; valid: {}",
                                  origins.of(section), section, k.path, k.description,
                                  key_valid_text(k)));
  }
}

}  // namespace

Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides) {
  return load_recipe_text(read_file_bytes(path), path, overrides);
}

Recipe load_recipe_text(const std::string& text, const std::string& path,
                        const std::vector<std::string>& overrides) {
  check_text_bytes(text, path, TextOrigin::file);
  const YamlDocuments docs = parse_documents(text, path);
  if (docs.count == 0 || (docs.count == 1 && docs.first.IsNull()))
    throw ConfigError(fmt::format("{}: the recipe is empty; it needs at least data.train (see "
                                  "configs/README.md for every key)",
                                  path));
  if (docs.count > 1)
    throw ConfigError(fmt::format("{}: a second YAML document starts here (after a --- line, or "
                                  "a line indented less than the first key); a recipe is one "
                                  "document",
                                  YamlSource{path, ""}.at(docs.second)));
  const YAML::Node& root = docs.first;
  if (!root.IsMap())
    throw ConfigError(fmt::format("{}: a recipe is a map of sections ({}), got {}",
                                  YamlSource{path, ""}.at(root.Mark()),
                                  join(section_children("")),
                                  root.IsSequence() ? "a list" : "the value " + excerpt(root.Scalar())));
  check_untagged(root, YamlSource{path, ""}.at(root.Mark()), "the recipe",
                 "a plain map of the sections " + join(section_children("")));
  Recipe recipe;
  recipe.path = path;
  KeyOrigins origins;
  origins.file = path;
  RecipeReader reader(recipe, origins);
  try {
    reader.read_section(root, "", YamlSource{path, ""});
    for (const std::string& arg : overrides) reader.apply_override(arg);
  } catch (const YAML::Exception& e) {
    // Every node access above is checked; this guards against yaml-cpp surprises.
    throw ConfigError(fmt::format("{}: cannot read the recipe: {}",
                                  YamlSource{path, ""}.at(e.mark), e.msg));
  }
  check_required(origins);
  if (!recipe.model.from.empty()) apply_model_from(recipe.model, origins);
  if (recipe.train.seq_len == 0) recipe.train.seq_len = recipe.model.seq_len;
  check_recipe(recipe, origins);
  return recipe;
}

}  // namespace trainer
