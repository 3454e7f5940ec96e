// Pieces for the multi-tensor ops' tests (CPU and CUDA alike): piece sizes that cross the
// CUDA tables' boundaries (44 pieces per AdamW launch, 120 per sum_squares launch) and its
// tiles (2048 elements), with empty pieces among them; and the AdamW pieces over slices of
// one buffer per argument, each with its own weight decay, seed and offset, as ParamStore
// builds them.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

#include "kernels/backend.h"

namespace trainer::testing {

inline std::vector<int64_t> multi_tensor_sizes(int pieces) {
  const int64_t cycle[] = {1, 13, 4099, 0, 2048, 2049, 7, 6150, 768, 0, 2047, 96};
  std::vector<int64_t> sizes;
  for (int i = 0; i < pieces; ++i) sizes.push_back(cycle[i % 12]);
  return sizes;
}

inline int64_t total_of(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
}

// Piece i covers [sum of sizes before i, + sizes[i]) of every argument; copy may be undefined.
inline std::vector<AdamWOp> adamw_many_pieces(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor copy,
                                              const std::vector<int64_t>& sizes, const AdamWStep& h) {
  std::vector<AdamWOp> pieces;
  int64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t b = at, e = at + sizes[i];
    AdamWStep hi = h;
    hi.weight_decay = i % 3 == 0 ? 0.0f : h.weight_decay;
    hi.seed = h.seed + i;
    hi.offset = h.offset + 1000 * i;
    pieces.push_back(AdamWOp{param.flat(b, e), grad.flat(b, e), m.flat(b, e), v.flat(b, e),
                             copy.defined() ? copy.flat(b, e) : Tensor{}, hi});
    at = e;
  }
  return pieces;
}

// The tensors of `x` cut at `sizes`.
inline std::vector<Tensor> cut(Tensor x, const std::vector<int64_t>& sizes) {
  std::vector<Tensor> xs;
  int64_t at = 0;
  for (int64_t n : sizes) {
    xs.push_back(x.flat(at, at + n));
    at += n;
  }
  return xs;
}

}  // namespace trainer::testing
