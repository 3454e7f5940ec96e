// Byte counts as people read them: "512 B", "1.5 KiB", "3.2 MiB", "2.00 GiB" (binary units;
// one decimal below a GiB, two from there on).
#pragma once

#include <cstdint>
#include <string>

namespace trainer {

std::string format_bytes(int64_t bytes);

}  // namespace trainer
