// Source draws for blends (see blend_mix.h).
#include "data/blend_mix.h"

#include "data/shuffle.h"
#include "kernels/base/check.h"

namespace trainer {
namespace {

constexpr uint64_t kBlendStream = 0xB1E9D;

}  // namespace

std::vector<double> blend_cumulative(const std::vector<double>& weights) {
  double total = 0;
  int last = -1;
  for (size_t k = 0; k < weights.size(); ++k) {
    TRAINER_CHECK(weights[k] >= 0, "blend weight below zero");
    total += weights[k];
    if (weights[k] > 0) last = static_cast<int>(k);
  }
  TRAINER_CHECK(last >= 0 && total > 0, "blend without a positive weight");
  std::vector<double> c(weights.size());
  double sum = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    sum += weights[k];
    c[k] = static_cast<int>(k) >= last ? 1.0 : sum / total;
  }
  return c;
}

int blend_pick(uint64_t seed, int64_t s, const std::vector<double>& c) {
  const uint64_t bits = stream_seed(seed, kBlendStream, static_cast<uint64_t>(s));
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // in [0, 1)
  for (size_t k = 0; k < c.size(); ++k)
    if (u < c[k]) return static_cast<int>(k);
  return static_cast<int>(c.size()) - 1;  // unreachable: the last positive entry is 1
}

}  // namespace trainer
