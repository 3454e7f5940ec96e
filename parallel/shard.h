// Shard ranges: how a flat range is split into equal contiguous parts (ZeRO over the data
// group). Sizes are padded up to a multiple of the number of parts so every part is equal,
// which is what equal-block reduce-scatter and all-gather need (parameter units further, see
// unit_padded). Range itself lives in kernels/base/range.h.
#pragma once

#include <cstdint>

#include "kernels/base/range.h"

namespace trainer {

inline int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Elements a parameter unit of `numel` takes in the flat buffers: a multiple of dp (equal
// shards) times kUnitAlignElements, so that every unit and every shard of it starts 16-byte
// aligned in bf16 (32 in f32) wherever the buffer does. A unit at an odd offset would put every
// later weight at one too, and the GPU would lose cuBLASLt's aligned kernels, the bias and GELU
// epilogues and the vectorized norm, encoder and AdamW kernels for them. Padding to dp alone
// does that at data 5 or 7 for gpt2-124m, 3, 6, 7, 12 or 24 for gpt2-1.5b and 3, 5, 6, 7, 12 or
// 24 for llama3.2-1b. The cost: fewer than 8 dp elements a unit.
inline constexpr int64_t kUnitAlignElements = 8;
inline int64_t unit_padded(int64_t numel, int dp) { return round_up(numel, kUnitAlignElements * dp); }

// Part `index` of `parts` equal parts of [0, padded_size); padded_size % parts == 0.
inline Range shard_range(int64_t padded_size, int parts, int index) {
  int64_t part = padded_size / parts;
  return {part * index, part * (index + 1)};
}

}  // namespace trainer
