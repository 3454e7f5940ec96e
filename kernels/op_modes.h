// The small enums the op structs of the backend_*_ops.h headers share.
#pragma once

#include <cstdint>

namespace trainer {

enum class Accumulate : uint8_t { overwrite, add };
enum class Transpose : uint8_t { none, transpose };

}  // namespace trainer
