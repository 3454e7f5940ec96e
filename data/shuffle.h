// Platform-independent pseudo-random shuffling for the data pipeline. std::shuffle and
// std::uniform_int_distribution are implementation-defined, so the same seed would give
// another order under another standard library; everything here is spelled out instead:
// SplitMix64 (Steele, Lea, Flood 2014) as the generator, rejection sampling for unbiased
// bounded draws, and Fisher-Yates from the last element down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace trainer {

// SplitMix64's output function: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return mix64(state_);
  }
  // Uniform in [0, bound), bound > 0: draws below 2^64 mod bound are rejected so that every
  // value has the same number of preimages.
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (true) {
      const uint64_t x = next();
      if (x >= threshold) return x % bound;
    }
  }

 private:
  uint64_t state_;
};

// The seed of an independent stream named by a tuple of integers (seed, epoch, purpose, index).
inline uint64_t stream_seed(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t h = mix64(seed ^ 0x6A09E667F3BCC908ull);
  h = mix64(h ^ (a + 0x9E3779B97F4A7C15ull));
  h = mix64(h ^ (b + 0xBB67AE8584CAA73Bull));
  return mix64(h ^ (c + 0x3C6EF372FE94F82Bull));
}

template <class T>
void fisher_yates(std::vector<T>* v, SplitMix64* rng) {
  for (size_t i = v->size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng->below(i));
    std::swap((*v)[i - 1], (*v)[j]);
  }
}

}  // namespace trainer
