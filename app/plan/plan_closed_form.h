// The layout search's memory model: closed forms of the sizes the trainer's allocators produce
// (see plan_memory.h), so `plan --search` can rank thousands of layouts without building a
// model for each. Unit sizes come from the model shape alone; ParamStore's buffers, its staging
// pool (replayed call by call in the order GptStage and the pipeline schedule make the calls),
// the libnbc temporaries and GptStage's activations (plan_activation.h) are formulas.
//
// Invariant: for every layout, equal to the dry run's figures (plan_dry_run.h), which are the
// allocators' own (the dry run builds the trainer's RankModel on a MetaBackend and replays a
// step). tests/app/test_plan_memory.cpp holds the two equal for every layout of small worlds,
// both families, every schedule, ZeRO stage and recomputation mode, and
// tests/app/mpi_plan_memory.cpp holds both to a running trainer: the allocators are the truth,
// these formulas only the fast path of `plan --search`.
#pragma once

#include <cstdint>
#include <vector>

#include "app/plan/plan_memory.h"
#include "model/gpt_config.h"

namespace trainer {

// A rank's parameter units in forward order (elements, each padded as unit_padded says).
struct PlanUnits {
  std::vector<int64_t> padded;
  int64_t max_param = 0;  // elements of the largest local parameter
  ParallelDims dims;  // virtual_stages: chunks on this rank
  int n_layers = 0;                // over all chunks
  std::vector<int> chunk_layers;   // per chunk (virtual stages), in local order
  bool first = true, last = true;  // embeds (chunk 0) / holds the head (the last chunk)
  bool tied = true;  // the head is the token table (summed between the first and last stage)
  // Local unit indices as in StageLayout (-1 when absent).
  int unit_wte = -1, unit_wpe = -1, unit_first_block = -1, unit_lnf = -1, unit_head_wte = -1;

  int64_t total() const;        // StageLayout::total()
  int64_t shard_total() const;  // StageLayout::shard_total()
  int64_t max_padded() const;   // StageLayout::max_unit_padded()
};

// StageLayout's unit sizes from the model shape alone (no parameter table).
PlanUnits plan_units_closed_form(const GptConfig& config, const ParallelDims& dims, int pp_rank,
                                 const std::vector<int>& stage_layers);

// ParamStore's persistent buffers (its constructor).
StoreMemory plan_store_memory(const PlanUnits& units, ZeroPolicy zero, int64_t act_bytes);

// Peak bytes of ParamStore's staging pool over a training step: units gathered per use
// (ParamGather::per_unit) and the per-unit gradient buffers and reduce-scatter outputs
// (GradReduction::per_unit_reduce_scatter, with their bf16 copies under a bf16 `reduce`);
// under bucketed reductions 0, or the whole-gradient buffer's bf16 copy. The
// pool keeps every buffer it ever allocated for reuse, by exact size. The step is replayed
// with min(micro-batches, 4) micro-batches (interleaved: two groups of stages) in the
// schedule's order: after the first backward the pool's pattern repeats, so more micro-batches
// allocate nothing new.
int64_t plan_staging_peak(const PlanUnits& units, ZeroPolicy zero, int64_t act_bytes, DType reduce,
                          const PipeShape& shape, int pp_rank);
// Peak bytes of the CPU path's MPI reduction temporaries over a step (see plan_memory.h).
int64_t plan_reduction_transient(const PlanUnits& units, ZeroPolicy zero, int64_t act_bytes, DType reduce,
                                 const PipeShape& shape, int pp_rank, double bucket_mb);
// Gradient buckets of GradReduction::bucketed_all_reduce in the order backward completes them (bytes), formed as
// ParamStore forms them: consecutive units until parallel.bucket_mb is reached.
// Under a split backward the blocks complete in backward_weight, after the head and the
// embedding.
std::vector<int64_t> plan_buckets(const PlanUnits& units, double bucket_mb, BackwardSplit split);

// One rank of stage pp_rank, every figure by formula.
PlanRankMemory plan_rank_memory_closed_form(const GptConfig& config, const PlanLayout& layout, int pp_rank,
                                            int64_t act_bytes, HostTransients host);

}  // namespace trainer
