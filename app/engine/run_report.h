// Start-of-run report: model size, layout, schedule and bubble, and memory per rank.
#pragma once

#include <cstdint>
#include <string>

#include "app/engine/trainer.h"

namespace trainer {

std::string format_bytes(int64_t bytes);
// Collective over the host world (gathers the largest per-rank total); rank 0 prints.
void print_run_report(Trainer& trainer, bool print);
std::string memory_line(const RankMemory& m);

}  // namespace trainer
