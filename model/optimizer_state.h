// OptimizerState: the fp32 tensors kept per parameter beyond its compute copy and gradient (the
// master weights and AdamW's two moments, DeepSpeed's "optimizer states"). ParamStore reads and
// writes them by this name and checkpoints store each under it, so both sides share one type.
#pragma once

#include <cstdint>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class OptimizerState : uint8_t { master, m, v };

// The names a checkpoint manifest stores the states under (also `ckpt inspect --state`), in
// the order checkpoints write them.
inline constexpr EnumName<OptimizerState> kOptimizerStateNames[] = {
    {OptimizerState::master, "master"}, {OptimizerState::m, "adam_m"}, {OptimizerState::v, "adam_v"}};
inline const char* optimizer_state_name(OptimizerState state) {
  return enum_name(kOptimizerStateNames, state);
}

// Every state, in the order checkpoints write them.
inline constexpr auto kOptimizerStates = enum_values(kOptimizerStateNames);

}  // namespace trainer
