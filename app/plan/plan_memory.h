// Memory of one rank for `trainer plan`: what the rank allocates through its Backend (ParamStore's
// buffers under the ZeRO policy, its staging pool for per-unit gathers and reduce-scatters,
// GptStage's activation buffers) and, on the CPU path, the host memory it needs for a while
// beyond those. All figures are bytes unless named elements.
//
// Two sources fill it:
// - plan_dry_run.h: the exact figures, from the trainer's own StageLayout, ParamStore and
//   GptStage running one step on a MetaBackend with DryComms. What `trainer plan` prints.
//   For a rank of a running trainer, after its first step, the rank's total equals what the
//   trainer has allocated through its Backend (tests/app/mpi_plan_memory.cpp).
// - plan_closed_form.h: formulas of the same sizes, fast enough for `plan --search` to rank
//   thousands of layouts; tests/app/test_plan_memory.cpp checks them against the dry run.
//
// On the CPU path the process also needs host memory for a while beyond those buffers (the
// peak resident set shows it; tests/app/test_plan_rss.cpp compares):
// - ParamStore::init_random draws parameters into an f32 staging buffer of at most
//   ParamStore::kInitChunkElements elements, before GptStage allocates the activations (on a
//   GPU the same few MB are device memory, inside the runtime figure).
// - MpiComm's collectives are Open MPI's non-blocking ones (coll/libnbc), and libnbc reduces
//   through a temporary host buffer as large as the message, from start to completion (an
//   in-place all-reduce: one copy; reduce-scatter: one, two on the group's root beyond 2
//   ranks). Bucketed all-reduce keeps at most two buckets in flight (ParamStore waits for
//   the older before starting a third), so the two largest consecutive buckets count; per-unit
//   reduce-scatter keeps at most 3 in flight; the tied embedding's all-reduce follows.
//   Tensor-parallel all-reduces of (B,T,C) activations are small and not counted.
// With NCCL on GPUs neither is device memory, so GPU plans leave them out.
#pragma once

#include <cstdint>
#include <vector>

#include "app/plan/plan_device.h"
#include "kernels/backend_options.h"
#include "model/gpt_block.h"
#include "model/gpt_config.h"
#include "model/gpt_stage.h"
#include "model/param_store.h"
#include "parallel/dry_comm.h"
#include "parallel/parallel_dims.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/zero_policy.h"

namespace trainer {

// The compute copy's element type for its size in bytes (4: f32, 2: bf16).
inline DType plan_act_dtype(int64_t act_bytes) { return act_bytes == 4 ? DType::f32 : DType::bf16; }

// ParamStore's persistent buffers (MemoryFigures without the staging pool).
struct StoreMemory {
  int64_t params = 0;     // compute copy (act dtype): whole, or the shard when parameters are sharded
  int64_t master = 0;     // fp32 master where it is not the compute copy itself
  int64_t grads = 0;      // f32 gradient accumulators: whole, or the shard when gradients are sharded
  int64_t optimizer = 0;  // AdamW m and v (f32): whole, or the shard when optimizer state is sharded
  int64_t total() const { return params + master + grads + optimizer; }
};

// Whether to count the CPU path's temporary host memory (see the top of this file).
enum class HostTransients : uint8_t { none, cpu_path };

// Everything one rank allocates through its Backend, and the CPU path's host transients.
struct PlanRankMemory {
  int pp_rank = 0;
  int n_layers = 0;
  int64_t param_elements = 0;  // units held, padded (StageLayout::total())
  StoreMemory store;
  int64_t staging = 0;         // ZeRO staging pool peak
  ActivationMemory acts;       // the recipe's recomputation
  int64_t acts_by_recompute[3] = {0, 0, 0};  // activations() under none, gelu, block
  int64_t init_transient = 0;      // f32 host copy of the largest parameter during init
  int64_t reduction_transient = 0; // peak of MPI's reduction temporaries during a step
  int64_t comm() const { return staging + acts.p2p; }
  int64_t total() const { return store.total() + staging + acts.total(); }
  // The most the rank holds at once: during init (store + init copy) or during a step.
  int64_t peak() const {
    const int64_t init = store.total() + init_transient, step = total() + reduction_transient;
    return init > step ? init : step;
  }
};

// The layout parameters plan needs besides the model shape: the degrees, and how they run.
struct PlanLayout : ParallelDims {
  int zero = 0;  // parallel.zero, as the recipe numbers it; ask zero_policy() what it means
  int micro_batch = 1;
  int global_batch = 1;
  int seq_len = 1;
  Schedule schedule = Schedule::one_f_one_b;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
  std::vector<int> stage_layers;  // per virtual stage; empty = even split
  double bucket_mb = 25.0;
  DType grad_reduce_dtype = DType::f32;  // parallel.grad_reduce_dtype
  BucketReduce bucket_reduce = BucketReduce::all_reduce;  // bucket_reduce_on(the run's device)
  // The attention mask and position reset (their (B, T) tensors per slot); the boundary token
  // is resolved by the Trainer (document_boundary_from), which a plan does not need.
  DocumentOptions documents;
  int grad_accum() const { return global_batch / (micro_batch * data); }
  ZeroPolicy zero_policy() const { return trainer::zero_policy(zero).with_bucket_reduce(bucket_reduce); }
  bool reduces_in_bf16() const { return trainer::reduces_in_bf16(grad_reduce_dtype, data); }
};

// libnbc's temporary host buffers for one collective over `group_size` ranks with `in_bytes` of
// input (the CPU path's non-blocking MPI collectives): an in-place all-reduce holds one copy of
// the message, a binomial reduce-scatter one (two on the group's root beyond 2 ranks); a group
// of one holds nothing.
int64_t libnbc_temp_bytes(CommCall call, int64_t in_bytes, int group_size);

// The step's schedule shape.
PipeShape plan_pipe_shape(const PlanLayout& layout);
// The stages whose ranks the closed forms evaluate: the first (embeddings), the second (the
// most layers of an even split, like every middle stage) and the last (the head), each once.
std::vector<int> plan_sampled_stages(const ParallelDims& dims);
// The shape a plan replays instead of the whole step: at most `cap` micro-batches, or under the
// interleaved schedule two whole groups of stages (it needs whole groups; by the second group
// every chunk has passed its warm-up, so the pattern repeats), under zero_bubble 2p + 2 (its
// deferred weight passes settle later than 1F1B's pattern).
PipeShape plan_replay_shape(const PipeShape& shape, int cap);
// Micro-batches alive at once per chunk on a stage, as the trainer sizes its activation slots.
int plan_slots(const PlanLayout& layout, int pp_rank);

// The backend's scratch for attention beyond the activation buffers: 0 for our flash kernels;
// under train.attention: cudnn on a GPU, the deterministic backward's dP workspace as
// cudnn-frontend sizes it, B x (H / tensor) x T64 x T64 x 2 bytes with T64 = T rounded up to
// 64 (805 MB for gpt2-124m at 32 x 1024). A lower bound: the plan's own workspace size is only
// known once cuDNN has built it.
int64_t plan_attention_workspace(const GptConfig& config, const PlanLayout& layout, const DeviceSpec& device,
                                 AttentionImpl attention);

}  // namespace trainer
