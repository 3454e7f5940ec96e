// Parameter initialisation on the device that holds the parameters (split out of backend.h,
// which includes this file and states the rules every op follows): a model's first weights
// are drawn where they live, so a GPU run does not wait for the host to draw and upload them,
// and every backend draws the same bits (kernels/base/box_muller.h).
// Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/tensor.h"

namespace trainer {

// Elements [first, first + n) of a normal stream: element e is std * z(e), rounded to f32 once
// (the product in double), where z(e) is normal e % 4 of Philox block e / 4 of (key, stream);
// elements with e >= zero_from are 0 (a padded vocabulary's rows).
struct NormalFill {
  uint64_t key = 0;
  uint64_t stream = 0;
  int64_t first = 0;
  double std = 1;
  int64_t zero_from = std::numeric_limits<int64_t>::max();
};

// out (n) f32 = elements [fill.first, fill.first + n) of fill's stream; first >= 0, first + n
// no more than 2^62, std finite and 0 or of magnitude at least 2^-60 (so no product is a
// denormal, which one backend would flush and another not). Bit-identical on every backend.
struct InitNormalOp {
  static constexpr const char* kName = "init_normal";
  Tensor out;
  NormalFill fill;
};

}  // namespace trainer

// One row for the whole init: its shapes are the parameter chunks.
#define TRAINER_INIT_OPS(X) X(InitNormalOp, void, "all parameters")
