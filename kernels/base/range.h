// Range: a half-open interval [begin, end) of element indices in a flat buffer (a parameter
// inside a unit, a rank's shard, a piece of a file). Invariant of a well-formed range:
// begin <= end; intersect() keeps it, returning an empty range at the later begin when the
// two do not overlap.
#pragma once

#include <cstdint>

namespace trainer {

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
};

inline Range intersect(Range a, Range b) {
  Range r{a.begin > b.begin ? a.begin : b.begin, a.end < b.end ? a.end : b.end};
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

}  // namespace trainer
