// Start-of-run report: model size, layout, schedule and bubble, and memory per rank.
#pragma once

#include <cstdint>
#include <string>

#include "app/engine/metrics.h"
#include "app/engine/trainer.h"

namespace trainer {

std::string format_bytes(int64_t bytes);
// Collective over the host world (gathers the largest per-rank total); prints on the rank
// with Reporting::on.
void print_run_report(Trainer& trainer, Reporting reporting);
std::string memory_line(const RankMemory& m);

}  // namespace trainer
