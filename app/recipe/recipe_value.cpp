// Strict conversion of YAML values to recipe fields (see recipe_value.h). Only plain YAML
// scalars count as numbers and booleans: "12" in quotes is a string, 1.5 is not an integer,
// yes/no are not booleans, and explicit tags are refused, so a recipe means one thing.
#include "app/recipe/recipe_value.h"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {

std::string YamlSource::at(const YAML::Mark& mark) const {
  if (!override_arg.empty()) return "--set " + excerpt(override_arg);
  if (mark.line < 0 || mark.column < 0) return file;
  return fmt::format("{}:{}:{}", file, mark.line + 1, mark.column + 1);
}

namespace {

// Non-specific tags: "?" for plain scalars, "!" for quoted ones; anything else was explicit.
constexpr const char* kPlainTag = "?";
constexpr const char* kQuotedTag = "!";

[[noreturn]] void fail(const std::string& where, const KeySpec& key, const std::string& problem) {
  throw ConfigError(fmt::format("{}: {}: {}; valid: {}", where, key.path, problem,
                                key_valid_text(key)));
}

std::string describe(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.IsNull()) return "nothing";
  if (node.Tag() == kQuotedTag) return "the quoted string " + message_quote(node.Scalar());
  return excerpt(node.Scalar());
}

bool all_of_chars(const std::string& text, const char* allowed) {
  return !text.empty() && text.find_first_not_of(allowed) == std::string::npos;
}

std::optional<double> parse_number(const std::string& text) {
  // Decimal notation only: no hex, no inf/nan, no YAML 1.1 sexagesimal or underscores.
  if (!all_of_chars(text, "0123456789+-.eE") || text.find_first_of("0123456789") == std::string::npos)
    return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool in_bounds(double v, const KeySpec& key) {
  if (key.lo.kind == BoundKind::closed && !(v >= key.lo.value)) return false;
  if (key.lo.kind == BoundKind::open && !(v > key.lo.value)) return false;
  if (key.hi.kind == BoundKind::closed && !(v <= key.hi.value)) return false;
  if (key.hi.kind == BoundKind::open && !(v < key.hi.value)) return false;
  return true;
}

// Whether a key's value may be written in quotes: names and strings may, numbers and booleans
// may not ("12" in quotes is a string).
enum class Quotes : uint8_t { refused, accepted };

// The scalar text of a value that must be a plain (unquoted) scalar of the key's type.
std::string scalar_text(const KeySpec& key, const YAML::Node& node, const std::string& where,
                        const std::string& type_words, Quotes quotes) {
  if (!node.IsDefined() || node.IsNull()) fail(where, key, "no value given");
  if (!node.IsScalar()) fail(where, key, fmt::format("expected {}, got {}", type_words, describe(node)));
  const std::string& tag = node.Tag();
  if (tag != kPlainTag && tag != kQuotedTag)
    fail(where, key, fmt::format("explicit YAML tag {} is not supported; write the plain value", excerpt(tag)));
  if (tag == kQuotedTag && quotes == Quotes::refused)
    fail(where, key, fmt::format("expected {}, got {}; write it without quotes", type_words,
                                 describe(node)));
  return node.Scalar();
}

long long parse_integer(const KeySpec& key, const YAML::Node& node, const std::string& where,
                        long long max_value) {
  std::string text = scalar_text(key, node, where, "an integer", Quotes::refused);
  std::string digits = text[0] == '+' || text[0] == '-' ? text.substr(1) : text;
  if (!all_of_chars(digits, "0123456789")) {
    if (parse_number(text)) fail(where, key, excerpt(text) + " is not a whole number");
    fail(where, key, fmt::format("expected an integer, got {}", describe(node)));
  }
  errno = 0;
  long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v > max_value || v < -max_value - 1 || !in_bounds(double(v), key))
    fail(where, key, excerpt(text) + " is out of range");
  return v;
}

double parse_bounded_number(const KeySpec& key, const YAML::Node& node, const std::string& where) {
  std::string text = scalar_text(key, node, where, "a number", Quotes::refused);
  std::optional<double> v = parse_number(text);
  if (!v) fail(where, key, fmt::format("expected a number, got {}", describe(node)));
  if (!in_bounds(*v, key)) fail(where, key, excerpt(text) + " is out of range");
  return *v;
}

[[noreturn]] void unknown_value(const KeySpec& key, const std::string& text, const std::string& where) {
  std::string hint = closest_name(text, key.choices);
  fail(where, key, fmt::format("unknown value {}{}", message_quote(text),
                               hint.empty() ? "" : " (did you mean " + hint + "?)"));
}

uint8_t parse_choice(const KeySpec& key, const YAML::Node& node, const std::string& where) {
  std::string text = scalar_text(key, node, where, "a name", Quotes::accepted);
  for (size_t i = 0; i < key.choices.size(); ++i)
    if (key.choices[i] == text) return key.choice_values[i];
  unknown_value(key, text, where);
}

std::string checked_text(const KeySpec& key, const std::string& text, const std::string& where) {
  if (key.text_rule == TextRule::non_empty && text.empty()) fail(where, key, "the value is empty");
  if (key.choices.empty()) return text;
  for (const std::string& c : key.choices)
    if (c == text) return text;
  unknown_value(key, text, where);
}

const YAML::Node& list_node(const KeySpec& key, const YAML::Node& node, const std::string& where) {
  if (!node.IsDefined() || node.IsNull()) fail(where, key, "no value given");
  if (!node.IsSequence()) fail(where, key, fmt::format("expected a list, got {}", describe(node)));
  // As for scalars: a tag on a list (!!seq, !custom) would be ignored, so it is refused.
  if (node.Tag() != kPlainTag)
    fail(where, key, fmt::format("explicit YAML tag {} is not supported; write the plain list", excerpt(node.Tag())));
  return node;
}


// The keys of one map inside a list value (a blend source, a stage): each known, none twice.
void check_item_keys(const KeySpec& key, const YAML::Node& item, const std::string& where,
                     const std::vector<std::string>& known, const char* what) {
  if (!item.IsMap()) fail(where, key, fmt::format("each {} is a map, got {}", what, describe(item)));
  std::vector<std::string> seen;
  for (auto it = item.begin(); it != item.end(); ++it) {
    const std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string valid;
      for (const std::string& k : known) valid += (valid.empty() ? "" : ", ") + k;
      fail(where, key, fmt::format("unknown key {} in a {} (keys: {})", message_quote(name), what, valid));
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end())
      fail(where, key, fmt::format("duplicate key {} in a {}", name, what));
    seen.push_back(name);
  }
}

bool is_source_name(const std::string& name) {
  return all_of_chars(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");
}

// A glob string (a single source; "" = none), or a list of {path, weight, name} maps.
std::vector<BlendSource> parse_sources(const KeySpec& key, const YAML::Node& node, const YamlSource& source,
                                       const YAML::Mark& key_mark) {
  auto where = [&](const YAML::Node& n) { return source.at(n.IsDefined() && !n.IsNull() ? n.Mark() : key_mark); };
  if (!node.IsSequence()) {
    const std::string text = checked_text(key, scalar_text(key, node, where(node), "a glob or a list of sources",
                                                           Quotes::accepted), where(node));
    return text.empty() ? std::vector<BlendSource>{} : std::vector<BlendSource>{BlendSource{text, 1, ""}};
  }
  std::vector<BlendSource> out;
  for (const YAML::Node& item : list_node(key, node, where(node))) {
    check_item_keys(key, item, where(item), {"path", "weight", "name"}, "source");
    BlendSource b;
    if (!item["path"]) fail(where(item), key, "a source needs a path");
    b.path = scalar_text(key, item["path"], where(item["path"]), "a glob", Quotes::accepted);
    if (b.path.empty()) fail(where(item["path"]), key, "a source's path is empty");
    if (item["weight"]) {
      const std::string text = scalar_text(key, item["weight"], where(item["weight"]), "a number", Quotes::refused);
      const std::optional<double> w = parse_number(text);
      if (!w || !(*w > 0)) fail(where(item["weight"]), key, fmt::format("weight {} is not a number > 0", excerpt(text)));
      b.weight = *w;
    }
    if (item["name"]) {
      b.name = scalar_text(key, item["name"], where(item["name"]), "a name", Quotes::accepted);
      if (!is_source_name(b.name))
        fail(where(item["name"]), key, fmt::format("name {} is not [A-Za-z0-9_.-]+", message_quote(b.name)));
    }
    for (const BlendSource& other : out) {
      if (other.path == b.path) fail(where(item), key, fmt::format("the path {} is listed twice", message_quote(b.path)));
      if (!b.name.empty() && other.name == b.name)
        fail(where(item), key, fmt::format("the name {} is given twice", message_quote(b.name)));
    }
    out.push_back(b);
  }
  if (out.empty() && key.text_rule == TextRule::non_empty) fail(where(node), key, "the list of sources is empty");
  return out;
}

std::vector<BlendStage> parse_stages(const KeySpec& key, const YAML::Node& node, const YamlSource& source,
                                     const YAML::Mark& key_mark) {
  auto where = [&](const YAML::Node& n) { return source.at(n.IsDefined() && !n.IsNull() ? n.Mark() : key_mark); };
  std::vector<BlendStage> out;
  for (const YAML::Node& item : list_node(key, node, where(node))) {
    check_item_keys(key, item, where(item), {"until_step", "train"}, "stage");
    if (!item["until_step"]) fail(where(item), key, "a stage needs until_step");
    BlendStage st;
    KeySpec step_key = key;
    step_key.lo = Bound{BoundKind::closed, 1};
    st.until_step = parse_integer(step_key, item["until_step"], where(item["until_step"]), INT_MAX);
    if (!out.empty() && st.until_step <= out.back().until_step)
      fail(where(item["until_step"]), key, fmt::format("until_step {} does not come after the previous stage's {}",
                                                       st.until_step, out.back().until_step));
    if (item["train"]) {
      KeySpec list_key = key;
      list_key.text_rule = TextRule::non_empty;
      st.train = parse_sources(list_key, item["train"], source, key_mark);
    }
    out.push_back(st);
  }
  return out;
}

struct Setter {
  const KeySpec& key;
  const YAML::Node& node;
  const YAML::Mark& key_mark;
  const YamlSource& source;
  Recipe& recipe;

  std::string where(const YAML::Node& n) const {
    return source.at(n.IsDefined() && !n.IsNull() ? n.Mark() : key_mark);
  }
  void operator()(IntField f) const {
    if (key.auto_value == AutoValue::accepted && node.IsScalar() && node.Tag() == kPlainTag && node.Scalar() == "auto") {
      f(recipe) = kAutoDegree;
      return;
    }
    f(recipe) = int(parse_integer(key, node, where(node), INT_MAX));
  }
  void operator()(U64Field f) const {
    std::string text = scalar_text(key, node, where(node), "an integer", Quotes::refused);
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (!all_of_chars(text, "0123456789") || errno == ERANGE)
      fail(where(node), key, fmt::format("expected a non-negative integer, got {}", describe(node)));
    f(recipe) = v;
  }
  void operator()(DoubleField f) const { f(recipe) = parse_bounded_number(key, node, where(node)); }
  void operator()(FloatField f) const {
    double v = parse_bounded_number(key, node, where(node));
    if (!std::isfinite(float(v)) || (v != 0 && float(v) == 0))
      fail(where(node), key, fmt::format("{} does not fit a 32-bit float", v));
    f(recipe) = float(v);
  }
  void operator()(BoolField f) const {
    std::string text = scalar_text(key, node, where(node), "true or false", Quotes::refused);
    if (text != "true" && text != "false")
      fail(where(node), key, fmt::format("expected true or false, got {}", describe(node)));
    f(recipe) = text == "true";
  }
  void operator()(StringField f) const {
    f(recipe) = checked_text(key, scalar_text(key, node, where(node), "a string", Quotes::accepted),
                             where(node));
  }
  void operator()(ChoiceField f) const { f(recipe) = parse_choice(key, node, where(node)); }
  void operator()(IntListField f) const {
    std::vector<int> values;
    for (const YAML::Node& item : list_node(key, node, where(node)))
      values.push_back(int(parse_integer(key, item, where(item), INT_MAX)));
    f(recipe) = values;
  }
  void operator()(PairField f) const {
    const YAML::Node& list = list_node(key, node, where(node));
    if (list.size() != 2)
      fail(where(node), key, fmt::format("got a list of {} element{}", list.size(),
                                         list.size() == 1 ? "" : "s"));
    auto [first, second] = f(recipe);
    *first = parse_bounded_number(key, list[0], where(list[0]));
    *second = parse_bounded_number(key, list[1], where(list[1]));
  }
  void operator()(SourceListField f) const { f(recipe) = parse_sources(key, node, source, key_mark); }
  void operator()(StageListField f) const { f(recipe) = parse_stages(key, node, source, key_mark); }
};

}  // namespace

void set_key_from_yaml(const KeySpec& key, const YAML::Node& value, const YAML::Mark& key_mark,
                       const YamlSource& source, Recipe& recipe) {
  std::visit(Setter{key, value, key_mark, source, recipe}, key.field);
}

void set_string_key(const KeySpec& key, const std::string& text, const YamlSource& source,
                    Recipe& recipe) {
  const std::string where = source.at(YAML::Mark::null_mark());
  if (std::holds_alternative<SourceListField>(key.field)) {
    const std::string glob = checked_text(key, text, where);
    std::get<SourceListField>(key.field)(recipe) =
        glob.empty() ? std::vector<BlendSource>{} : std::vector<BlendSource>{BlendSource{glob, 1, ""}};
    return;
  }
  if (!std::holds_alternative<StringField>(key.field))
    throw std::logic_error("set_string_key on non-string key " + key.path);
  std::get<StringField>(key.field)(recipe) = checked_text(key, text, where);
}

}  // namespace trainer
