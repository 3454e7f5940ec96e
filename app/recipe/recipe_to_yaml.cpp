// recipe_to_yaml: the resolved recipe as block YAML in schema order, one key per line, every
// key that applies to the recipe's model family present (see ArchScope). Strings are
// double-quoted (a glob such as "*.bin" would otherwise read as a YAML alias) and numbers
// are printed in their shortest exact form, so the text loads back to the same recipe.
#include <string>

#include "app/recipe/recipe.h"
#include "app/recipe/recipe_schema.h"

namespace trainer {

std::string recipe_to_yaml(const Recipe& recipe) {
  std::string out;
  std::vector<std::string> open;  // the section path currently printed, one part per level
  for (const KeySpec& key : recipe_schema()) {
    if (!key_applies(key, recipe)) continue;
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
      size_t dot = key.path.find('.', start);
      parts.push_back(key.path.substr(start, dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    const size_t depth = parts.size() - 1;  // the last part is the key itself
    size_t common = 0;
    while (common < open.size() && common < depth && open[common] == parts[common]) ++common;
    open.resize(common);
    for (size_t level = common; level < depth; ++level) {
      out += std::string(2 * level, ' ') + parts[level] + ":\n";
      open.push_back(parts[level]);
    }
    out += std::string(2 * depth, ' ') + parts.back() + ": " + key_value_yaml(key, recipe) + "\n";
  }
  return out;
}

}  // namespace trainer
