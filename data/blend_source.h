// The description of a data mix, shared by the recipe and the loader: sources (a glob list
// with a weight and a display name) and stages that change the mix at step boundaries.
//
// Invariants (checked by the recipe and again by the loader): weights are finite and > 0;
// a source's path is non-empty; names are unique within a list; stages' until_step values are
// positive and strictly increasing. A stage with an empty train list uses the base mix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

struct BlendSource {
  std::string path;   // glob (or several, comma-separated) of token shards
  double weight = 1;  // relative; a list's weights need not sum to 1
  std::string name;   // for metrics and messages; "" = derived (blend_source_names)
  bool operator==(const BlendSource& o) const { return path == o.path && weight == o.weight && name == o.name; }
};

struct BlendStage {
  int64_t until_step = 0;          // the stage covers steps up to and including this one
  std::vector<BlendSource> train;  // empty = the base mix (data.train)
  bool operator==(const BlendStage& o) const { return until_step == o.until_step && train == o.train; }
};

// The source list of one plain glob list (what a string in data.train means).
inline std::vector<BlendSource> single_source(const std::string& patterns) { return {BlendSource{patterns, 1, ""}}; }

// A source list that is one glob with weight 1 and no name: what a plain string means.
inline bool is_single_glob(const std::vector<BlendSource>& sources) {
  return sources.size() == 1 && sources[0].weight == 1 && sources[0].name.empty();
}

// The display names of a list: a source's own name, else the name of the folder its path is
// in when that is unique in the list (characters outside [A-Za-z0-9_.-] become '_'), else
// "sourceN" (N its index).
std::vector<std::string> blend_source_names(const std::vector<BlendSource>& sources);

}  // namespace trainer
