// The host's draw of normal streams (kernels/backend_init_ops.h): the CPU backend's
// init_normal and the model's host-side init (model/param_table.h) both call it, so host
// buffers and device buffers of one stream hold the same bits.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/backend_init_ops.h"

namespace trainer {

// One Box-Muller pair from two Philox words (what normal4_host does twice per block): exposed
// so that tests can sweep every uniform.
std::array<float, 2> normal_pair_host(uint32_t radius_word, uint32_t angle_word);

// Normals 4 * block .. 4 * block + 3 of the stream (key, stream).
std::array<float, 4> normal4_host(uint64_t key, uint64_t stream, uint64_t block);

// out[0, n) = elements [fill.first, fill.first + n) of fill's stream, over OpenMP threads
// (any thread count gives the same bits: each element is a pure function of its index).
void init_normal_host(float* out, int64_t n, const NormalFill& fill);

}  // namespace trainer
