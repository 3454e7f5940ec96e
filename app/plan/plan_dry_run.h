// The exact memory plan of one rank: the trainer's own StageLayout, ParamStore and GptStage are
// built on a MetaBackend (counts bytes, computes nothing) with DryComms standing in for the
// data, tensor, pipeline and tied-embedding groups, and run one training step through
// run_step_passes, the Trainer's own step. Every figure is then read from those objects, so
// the plan cannot drift from the allocators (see plan_memory.h for what is counted).
//
// The step is replayed with at most 2 * pipeline + 2 micro-batches (interleaved: 2 * pipeline;
// PlanReplay::steady), GptStage
// sized for the real number: once every stage has passed its warm-up and two steady-state
// forward/backward pairs, the staging pool and the reductions in flight repeat, so further
// micro-batches allocate nothing and hold nothing new (a global batch of thousands would
// otherwise cost seconds per plan). test_plan_memory.cpp checks steady == full.
#pragma once

#include <cstdint>
#include <vector>

#include "app/plan/plan_memory.h"
#include "kernels/op_profiler.h"
#include "model/gpt_config.h"

namespace trainer {

// How many of the step's micro-batches the dry run replays (see above).
enum class PlanReplay : uint8_t { steady, full };

// Stage pp_rank's rank at tensor and data rank 0 (every rank of a stage holds the same sizes).
PlanRankMemory plan_rank_memory(const GptConfig& config, const PlanLayout& layout, int pp_rank, int64_t act_bytes,
                                HostTransients host, PlanReplay replay = PlanReplay::steady);

// Every op of that rank's whole step (every micro-batch), as `bench --profile` files them, with
// the bytes and FLOPs they move and compute at least (OpCost); the times are 0 (nothing runs).
std::vector<OpProfileRow> plan_step_ops(const GptConfig& config, const PlanLayout& layout, int pp_rank,
                                        int64_t act_bytes, HostTransients host);

}  // namespace trainer
