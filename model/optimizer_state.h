// OptimizerState: the fp32 tensors kept per parameter beyond its compute copy and gradient (the
// master weights and AdamW's two moments, DeepSpeed's "optimizer states"). ParamStore reads and
// writes them by this name and checkpoints store each under it, so both sides share one type.
#pragma once

#include <cstdint>

namespace trainer {

enum class OptimizerState : uint8_t { master, m, v };

// Every state, in the order checkpoints write them.
inline constexpr OptimizerState kOptimizerStates[] = {OptimizerState::master, OptimizerState::m,
                                                      OptimizerState::v};

}  // namespace trainer
