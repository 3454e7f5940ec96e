// Recipe agreement across ranks (see recipe_agreement.h).
#include "app/engine/recipe_agreement.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "kernels/base/errors.h"
#include "parallel/comm_text.h"

namespace trainer {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "  lr: 0.003" under "train:" and "optimizer:" -> ("train.optimizer.lr", "0.003").
struct KeyedLine {
  std::string key, value;
};

std::vector<KeyedLine> keyed(const std::string& text) {
  std::vector<KeyedLine> out;
  std::vector<std::pair<size_t, std::string>> path;  // (indent, key)
  for (const std::string& line : lines_of(text)) {
    const size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    const size_t colon = line.find(':', indent);
    std::string key = colon == std::string::npos ? line.substr(indent) : line.substr(indent, colon - indent);
    std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    while (!path.empty() && path.back().first >= indent) path.pop_back();
    std::string full;
    for (const auto& p : path) full += p.second + ".";
    out.push_back({full + key, value});
    if (value.empty()) path.push_back({indent, key});
  }
  return out;
}

}  // namespace

std::string first_recipe_difference(const std::string& theirs, const std::string& mine) {
  const std::vector<KeyedLine> a = keyed(theirs), b = keyed(mine);
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const KeyedLine none{"(end of recipe)", "(absent)"};
    const KeyedLine& x = i < a.size() ? a[i] : none;
    const KeyedLine& y = i < b.size() ? b[i] : none;
    if (x.key == y.key && x.value == y.value) continue;
    if (x.key != y.key) return x.key + " vs " + y.key + " (different keys)";
    return x.key + ": " + x.value + " vs " + y.value;
  }
  return "";
}

void check_recipe_agreement(const Recipe& recipe, Comm& world) {
  if (world.size() == 1) return;
  const std::string mine = std::string("program_version: ") + TRAINER_VERSION + "\n" + recipe_to_yaml(recipe);
  const std::string theirs = broadcast_text(world, mine, 0);
  const std::string diff = world.rank() == 0 ? "" : first_recipe_difference(theirs, mine);

  // Every rank's verdict, to everyone.
  const std::vector<std::string> verdicts = all_gather_short_texts(world, diff, 256);
  std::string first;
  std::vector<int> ranks;
  for (int r = 0; r < world.size(); ++r) {
    const std::string& d = verdicts[size_t(r)];
    if (d.empty()) continue;
    if (first.empty()) first = "rank " + std::to_string(r) + " has " + d;
    ranks.push_back(r);
  }
  if (ranks.empty()) return;
  std::string list;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) list += ", ...";
  throw ConfigError("the ranks of this job run different recipes or programs: " + first +
                    " (rank 0's value first); ranks differing from rank 0: " + list +
                    "; every rank must get the same recipe, --set overrides and trainer binary");
}

}  // namespace trainer
