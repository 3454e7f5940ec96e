// Shard ranges: how a flat range is split into equal contiguous parts (ZeRO over the data
// group). Sizes are padded up to a multiple of the number of parts so every part is equal,
// which is what equal-block reduce-scatter and all-gather need.
#pragma once

#include <cstdint>

namespace trainer {

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
};

inline int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Part `index` of `parts` equal parts of [0, padded_size); padded_size % parts == 0.
inline Range shard_range(int64_t padded_size, int parts, int index) {
  int64_t part = padded_size / parts;
  return {part * index, part * (index + 1)};
}

inline Range intersect(Range a, Range b) {
  Range r{a.begin > b.begin ? a.begin : b.begin, a.end < b.end ? a.end : b.end};
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

}  // namespace trainer
