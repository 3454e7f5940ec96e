// Rotary embedding frequencies of a llama config: inv_freq[i] = 1 / theta^(2i / D) for
// i < D/2, then Llama 3.1's scaling when the config has it (Hugging Face's rope_type
// "llama3"): wavelengths longer than original_context / low_freq_factor are divided by
// `factor`, shorter than original_context / high_freq_factor kept, and those between
// interpolated smoothly. Computed in f32 the way Hugging Face computes them.
#pragma once

#include <vector>

#include "model/gpt_config.h"

namespace trainer {

std::vector<float> rope_inv_freq(const GptConfig& config);

}  // namespace trainer
