// Deterministic source draws for a blend: which source each sample of the run comes from.
//
// Invariants: the source of the run's sample s (counted over the whole run, across data ranks)
// depends only on (seed, s, mix) — not on the layout, the thread or the platform — and over any
// window of samples each source's count is binomial with p = its weight / the total weight.
// Draws come from SplitMix64-mixed counters (shuffle.h) turned into 53-bit uniforms.
#pragma once

#include <cstdint>
#include <vector>

namespace trainer {

// The cumulative distribution of weights (each >= 0, at least one > 0): c[k] = sum of the
// first k + 1 weights / the total, with the last entry that has a positive weight exactly 1.
std::vector<double> blend_cumulative(const std::vector<double>& weights);

// The source of sample s under the cumulative distribution c.
int blend_pick(uint64_t seed, int64_t s, const std::vector<double>& c);

}  // namespace trainer
