// Start-of-run report: how the job was launched (launch_report.h), model size, layout,
// schedule and bubble, and memory per rank.
#pragma once

#include <cstdint>
#include <string>

#include "app/engine/metrics.h"
#include "app/engine/trainer.h"
#include "kernels/base/format_bytes.h"
#include "parallel/mpi_runtime.h"

namespace trainer {

// Collective over the host world (gathers the largest per-rank total); prints on the rank
// with Reporting::on.
void print_run_report(Trainer& trainer, const MpiRuntime& mpi, Reporting reporting);
std::string memory_line(const RankMemory& m);

}  // namespace trainer
