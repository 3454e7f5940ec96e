// Counter-based random numbers (Philox4x32-10): a value is a pure function of (key, counter),
// so initialisation and sampling draw the same numbers in any parallel layout and after a
// resume, with no generator state to save.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace trainer {

std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo);

// 64-bit FNV-1a of a name: keys a parameter's stream by its global name.
uint64_t name_hash(std::string_view name);

// Uniform in (0, 1) from 32 random bits.
inline double uniform_open(uint32_t bits) { return (double(bits) + 0.5) * (1.0 / 4294967296.0); }

// Four standard normals from one Philox block (both Box-Muller outputs of its two pairs of
// words), in single precision: the normals of indices 4 * block .. 4 * block + 3 of a stream
// (weight init, stored as floats anyway). The transform is kernels/base/box_muller.h's, whose
// bits the CUDA init kernel reproduces exactly.
std::array<float, 4> normal4_at(uint64_t key, uint64_t stream, uint64_t block);

// Stream ids: the "purpose" part of the key, so different uses never share numbers.
enum class RngPurpose : uint64_t { init = 1, sample = 2, stochastic_round = 3 };

}  // namespace trainer
