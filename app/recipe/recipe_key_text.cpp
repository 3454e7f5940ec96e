// The texts derived from the recipe schema (see recipe_schema.h): a key's type, valid values,
// default and current value as YAML, and the quoting and suggestion helpers messages use.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <variant>

#include "app/recipe/recipe_schema.h"
#include "kernels/base/excerpt.h"

namespace trainer {
namespace {

std::string format_number(double v) { return fmt::format("{}", v); }

std::string bound_text(const KeySpec& k) {
  const Bound& lo = k.lo;
  const Bound& hi = k.hi;
  if (lo.kind != BoundKind::none && hi.kind != BoundKind::none)
    return fmt::format("in {}{}, {}{}", lo.kind == BoundKind::closed ? "[" : "(",
                       format_number(lo.value), format_number(hi.value),
                       hi.kind == BoundKind::closed ? "]" : ")");
  if (lo.kind != BoundKind::none)
    return fmt::format("{} {}", lo.kind == BoundKind::closed ? ">=" : ">", format_number(lo.value));
  if (hi.kind != BoundKind::none)
    return fmt::format("{} {}", hi.kind == BoundKind::closed ? "<=" : "<", format_number(hi.value));
  return "";
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

// Optimal string alignment distance: edits, with a swap of neighbours counted as one.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

namespace {
template <class F>
bool stored_as(const KeySpec& key) {
  return std::holds_alternative<F>(key.field);
}
}  // namespace

std::string key_type_name(const KeySpec& key) {
  if (stored_as<IntField>(key) || stored_as<U64Field>(key)) return "integer";
  if (stored_as<DoubleField>(key) || stored_as<FloatField>(key)) return "number";
  if (stored_as<BoolField>(key)) return "boolean";
  if (stored_as<StringField>(key)) return key.choices.empty() ? "string" : "choice";
  if (stored_as<ChoiceField>(key)) return "choice";
  if (stored_as<IntListField>(key)) return "integer list";
  if (stored_as<SourceListField>(key)) return "sources";
  if (stored_as<StageListField>(key)) return "stages";
  return "number pair";
}

std::string key_valid_text(const KeySpec& key) {
  if (!key.valid_note.empty()) return key.valid_note;
  if (!key.choices.empty()) return "one of: " + join(key.choices, ", ");
  std::string range = bound_text(key);
  if (stored_as<IntField>(key)) return "integer " + range + (key.auto_value == AutoValue::accepted ? ", or auto" : "");
  if (stored_as<U64Field>(key)) return "integer in [0, 2^64 - 1]";
  if (stored_as<DoubleField>(key) || stored_as<FloatField>(key)) return "number " + range;
  if (stored_as<BoolField>(key)) return "true or false";
  if (stored_as<StringField>(key)) return "any string";
  if (stored_as<IntListField>(key)) return "list of integers " + range;
  if (stored_as<SourceListField>(key)) return kSourcesValid;
  if (stored_as<StageListField>(key)) return "list of {until_step, train}";
  return "list of 2 numbers, each " + range;
}

std::string key_default_text(const KeySpec& key) {
  if (key.presence == Presence::required) return "(required)";
  return key_value_yaml(key, Recipe{});
}

std::string key_value_yaml(const KeySpec& key, const Recipe& recipe) {
  Recipe copy = recipe;  // the accessors hand out mutable references
  struct Printer {
    const KeySpec& key;
    Recipe& r;
    std::string operator()(IntField f) const {
      if (key.auto_value == AutoValue::accepted && f(r) == kAutoDegree) return "auto";
      return fmt::format("{}", f(r));
    }
    std::string operator()(U64Field f) const { return fmt::format("{}", f(r)); }
    std::string operator()(DoubleField f) const { return format_number(f(r)); }
    // Shortest text that reads back as the same float.
    std::string operator()(FloatField f) const { return fmt::format("{}", f(r)); }
    std::string operator()(BoolField f) const { return f(r) ? "true" : "false"; }
    // Strings limited to fixed names print plain, like choices; others are quoted.
    std::string operator()(StringField f) const {
      return key.choices.empty() ? yaml_quote(f(r)) : f(r);
    }
    std::string operator()(ChoiceField f) const {
      const uint8_t v = f(r);
      for (size_t i = 0; i < key.choice_values.size(); ++i)
        if (key.choice_values[i] == v) return key.choices[i];
      return fmt::format("{}", v);
    }
    std::string operator()(IntListField f) const {
      std::vector<std::string> items;
      for (int v : f(r)) items.push_back(fmt::format("{}", v));
      return "[" + join(items, ", ") + "]";
    }
    std::string operator()(PairField f) const {
      auto [a, b] = f(r);
      return "[" + format_number(*a) + ", " + format_number(*b) + "]";
    }
    std::string operator()(SourceListField f) const { return sources_yaml(f(r)); }
    std::string operator()(StageListField f) const {
      std::vector<std::string> items;
      for (const BlendStage& st : f(r))
        items.push_back(fmt::format("{{until_step: {}{}}}", st.until_step,
                                    st.train.empty() ? "" : ", train: " + sources_yaml(st.train)));
      return "[" + join(items, ", ") + "]";
    }
    // A single glob prints as a string; a blend as a flow list of maps.
    static std::string sources_yaml(const std::vector<BlendSource>& sources) {
      if (sources.empty()) return "\"\"";
      if (is_single_glob(sources)) return yaml_quote(sources[0].path);
      std::vector<std::string> items;
      for (const BlendSource& b : sources)
        items.push_back("{path: " + yaml_quote(b.path) + ", weight: " + format_number(b.weight) +
                        (b.name.empty() ? "" : ", name: " + yaml_quote(b.name)) + "}");
      return "[" + join(items, ", ") + "]";
    }
  };
  return std::visit(Printer{key, copy}, key.field);
}

std::string yaml_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string message_quote(const std::string& text) {
  const Excerpt e = split_excerpt(text);
  return yaml_quote(std::string(e.shown)) + e.tail;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  constexpr size_t kLongest = 100;  // no key is that long; spare the quadratic distance
  if (name.size() > kLongest) return best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  for (const std::string& c : candidates) {
    size_t d = edit_distance(name, c);
    bool prefix = std::min(name.size(), c.size()) >= 3 &&
                  (c.rfind(name, 0) == 0 || name.rfind(c, 0) == 0);
    if ((d <= limit || prefix) && d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace trainer
