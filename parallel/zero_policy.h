// ZeroPolicy: what a ZeRO stage (the recipe's parallel.zero, 0..3) means, expanded once into
// the named behaviours that ParamStore (and through it the checkpoint code, which reads and
// writes the slices ParamStore keeps), the planner and the recipe checks ask about, so no other
// file compares stage numbers (Megatron's DDP config and torchtitan's parallel_dims do the
// same: use_distributed_optimizer, overlap_grad_reduce, fsdp_enabled).
//
//   stage 0: every data rank keeps and updates everything; gradients all-reduced in buckets.
//   stage 1: AdamW state (and a separate fp32 master) sharded over the data group; gradients
//            still all-reduced in buckets; each rank updates its shard, then the compute
//            copy is all-gathered.
//   stage 2: also gradients: each unit's gradients are reduce-scattered into the rank's shard
//            every micro-batch, as soon as the unit's backward is done.
//   stage 3: also parameters: only the shard persists; a unit is all-gathered before its
//            forward and again before its backward, and freed after each.
//
// Invariants: each stage shards everything the one below it shards (optimizer state <=
// gradients <= parameters); the stage number is kept only to be printed and saved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/check.h"
#include "kernels/tensor.h"

namespace trainer {

// How the data group sums gradients.
enum class GradReduction : uint8_t {
  bucketed_all_reduce,      // consecutive units merged up to parallel.bucket_mb, all-reduced in
                            // place, once per step (after the last micro-batch's backward)
  per_unit_reduce_scatter,  // each unit reduce-scattered into the rank's shard, every micro-batch
};

// How parameters become whole again on every data rank.
enum class ParamGather : uint8_t {
  none,        // every rank updated every parameter itself
  after_step,  // each rank updated its shard; the compute copy is all-gathered after AdamW
  per_unit,    // only the shard persists; a unit is gathered for each use (forward, backward)
};

// Where the fp32 master weights live.
enum class MasterWeights : uint8_t {
  compute_copy,  // the f32 compute copy is the master itself (no second copy)
  full_copy,     // a separate fp32 copy of every local parameter
  own_shard,     // a separate fp32 copy of this rank's shard only
};

class ZeroPolicy {
 public:
  // The recipe's number, for messages, reports and manifests only.
  constexpr int stage() const { return stage_; }

  // AdamW's m and v are kept (and updated) for this rank's shard only.
  constexpr bool shard_optimizer_state() const { return stage_ >= 1; }
  // Gradient accumulators hold this rank's shard only.
  constexpr bool shard_gradients() const { return stage_ >= 2; }
  // The compute parameters persist as this rank's shard only (gathered per unit on use).
  constexpr bool shard_parameters() const { return stage_ >= 3; }

  constexpr GradReduction grad_reduction() const {
    return shard_gradients() ? GradReduction::per_unit_reduce_scatter : GradReduction::bucketed_all_reduce;
  }
  // Whether gradients are reduced after every micro-batch's backward (else only after the
  // step's last one: accumulation is local until then).
  constexpr bool reduce_every_micro_batch() const {
    return grad_reduction() == GradReduction::per_unit_reduce_scatter;
  }
  constexpr ParamGather param_gather() const {
    if (shard_parameters()) return ParamGather::per_unit;
    return shard_optimizer_state() ? ParamGather::after_step : ParamGather::none;
  }
  // An f32 compute copy that persists whole is the master; otherwise the master is separate,
  // as sharded as the optimizer state.
  constexpr MasterWeights master_weights(DType compute) const {
    if (compute == DType::f32 && !shard_parameters()) return MasterWeights::compute_copy;
    return shard_optimizer_state() ? MasterWeights::own_shard : MasterWeights::full_copy;
  }

 private:
  constexpr explicit ZeroPolicy(int stage) : stage_(stage) {}
  friend ZeroPolicy zero_policy(int stage);
  int stage_;
};

constexpr int kZeroStages = 4;  // parallel.zero takes 0 .. kZeroStages - 1

// The policy of a stage (the recipe schema has already refused other values; here another
// value is an internal error).
inline ZeroPolicy zero_policy(int stage) {
  TRAINER_CHECK(stage >= 0 && stage < kZeroStages,
                "ZeRO stage " + std::to_string(stage) + " (valid: 0.." + std::to_string(kZeroStages - 1) + ")");
  return ZeroPolicy(stage);
}

// Every stage, from the least sharded up (the planner's layout search).
inline std::vector<ZeroPolicy> all_zero_policies() {
  std::vector<ZeroPolicy> all;
  for (int s = 0; s < kZeroStages; ++s) all.push_back(zero_policy(s));
  return all;
}

}  // namespace trainer
