// The one check that weights coming in from outside (model.init_from: an llm.c file or a Hugging
// Face folder) are finite: every tensor read whole, in chunks, on every rank, before anything is
// loaded, so all ranks refuse a file together and each names the same first bad element. A NaN
// or inf loaded as a weight would train into NaN losses far from its cause.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/base/range.h"

namespace trainer {

// Reads elements [range) of a source's tensor `name` as f32.
using WeightRead = std::function<void(const std::string& name, Range range, float* out)>;

// tensors: (name, elements) in the order to check. Throws InputError "SOURCE: tensor NAME element
// I is nan|inf; ..." for the first non-finite value.
void check_weights_finite(const std::vector<std::pair<std::string, int64_t>>& tensors, const WeightRead& read,
                          const std::string& source);

}  // namespace trainer
