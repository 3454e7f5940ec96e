// Refusing a run that cannot fit in memory before it allocates: without this check a recipe
// or model asking for petabytes ended in std::bad_alloc (exit 1), and a model slightly too
// large was OOM-killed mid-start although `trainer plan` had said it would not fit.
//
// Each rank's need is the peak of its exact plan (plan_dry_run.h: what its Backend will
// allocate, and on the CPU path the host transients). What is on offer: on a GPU what
// cudaMemGetInfo calls free on the rank's device (after the context and library handles); on
// the CPU the smaller of MemAvailable and the cgroup's limit less its usage (cgroup_memory.h),
// shared by every rank on the host, whose needs are summed. A run that does not fit stops on
// every rank with one ConfigError (exit 2) that gives the plan's numbers and what to change;
// `train.allow_oversubscribe: true` starts it anyway, with a note.
#pragma once

#include <cstdint>
#include <string>

#include "app/plan/plan_memory.h"
#include "app/recipe/recipe.h"
#include "kernels/backend.h"
#include "model/gpt_config.h"
#include "parallel/comm.h"
#include "parallel/process_grid.h"

namespace trainer {

// What one rank needs and shares.
struct MemoryNeed {
  int rank = 0;
  int pp_rank = 0;
  PlanRankMemory plan;         // the rank's own plan; plan.peak() is its need
  int64_t shared_need = 0;     // the needs of every rank drawing on the same memory, summed
  int sharing_ranks = 1;       // how many ranks that is (1 on a GPU)
  std::string host;
};

// What the memory offers.
struct MemoryOffer {
  Device device = Device::cpu;
  int64_t available = 0;  // bytes
  std::string detail;     // where the figure comes from, for the message
};

// The refusal's message when the need exceeds the offer, "" when it fits.
std::string memory_fit_problem(const Recipe& recipe, const MemoryNeed& need, const MemoryOffer& offer);

// What this rank's device offers now (see the top of this file).
MemoryOffer memory_offer(Backend& backend);

// The check, collective over world (host buffers): every rank plans its own stage, the needs
// of ranks on one host are summed on the CPU, and when any rank's memory is short every rank
// throws the first such rank's message (or, with train.allow_oversubscribe, rank 0 prints it
// as a note and the run goes on).
void check_memory_fits(const Recipe& recipe, const GptConfig& config, const GridCoords& coords, Backend& backend,
                       Comm& world);

}  // namespace trainer
