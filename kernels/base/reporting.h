// Reporting: whether this rank reports: prints the run report, progress and samples and writes
// the metrics file. Rank 0 does; the other ranks (and every rank under bench --json) stay quiet.
// Passed explicitly rather than asked of a global rank.
#pragma once

#include <cstdint>

namespace trainer {

enum class Reporting : uint8_t { off, on };

}  // namespace trainer
