// Shard ranges: how a flat range is split into equal contiguous parts (ZeRO over the data
// group). Sizes are padded up to a multiple of the number of parts so every part is equal,
// which is what equal-block reduce-scatter and all-gather need. Range itself lives in
// kernels/base/range.h.
#pragma once

#include <cstdint>

#include "kernels/base/range.h"

namespace trainer {

inline int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Part `index` of `parts` equal parts of [0, padded_size); padded_size % parts == 0.
inline Range shard_range(int64_t padded_size, int parts, int index) {
  int64_t part = padded_size / parts;
  return {part * index, part * (index + 1)};
}

}  // namespace trainer
