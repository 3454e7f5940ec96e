// ZeroPolicy: what a ZeRO stage (the recipe's parallel.zero, 0..3) means, expanded once into
// the named behaviours that ParamStore (and through it the checkpoint code, which reads and
// writes the slices ParamStore keeps), the planner and the recipe checks ask about, so no other
// file compares stage numbers (Megatron's DDP config and torchtitan's parallel_dims do the
// same: use_distributed_optimizer, overlap_grad_reduce, fsdp_enabled).
//
//   stage 0: every data rank keeps and updates everything; gradients all-reduced in buckets.
//   stage 1: AdamW state (and a separate fp32 master) sharded over the data group; gradients
//            still summed once per step in buckets: all-reduced, or (with_bucket_reduce
//            reduce_scatter, which NCCL runs take: Megatron's distributed optimizer) each
//            unit reduce-scattered in place into this rank's shard, half the traffic; each
//            rank updates its shard, then the compute copy is all-gathered.
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
  bucketed_reduce_scatter,  // the same buckets, once per step, but each of their units
                            // reduce-scattered in place: only this rank's shard of the
                            // whole-gradient buffer is summed (ZeRO-1 on NCCL)
  per_unit_reduce_scatter,  // each unit reduce-scattered into the rank's shard, every micro-batch
};

// How stage 1 sums its buckets. All-reduce is the CPU path's (MPI's reduce-scatter may add in
// another order than its all-reduce, and the CPU path's bits are the reference for every
// layout); reduce-scatter is what a GPU run takes.
enum class BucketReduce : uint8_t { all_reduce, reduce_scatter };
// What a run on `device` takes.
constexpr BucketReduce bucket_reduce_on(Device device) {
  return device == Device::cuda ? BucketReduce::reduce_scatter : BucketReduce::all_reduce;
}

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
    if (shard_gradients()) return GradReduction::per_unit_reduce_scatter;
    return bucket_ == BucketReduce::reduce_scatter ? GradReduction::bucketed_reduce_scatter
                                                   : GradReduction::bucketed_all_reduce;
  }
  // Gradients summed once per step in buckets of whole units (stages 0 and 1).
  constexpr bool bucketed() const { return !shard_gradients(); }
  // After the reduction only this rank's shard of each unit's gradient is the data group's sum
  // (the rest of a whole-gradient buffer is this rank's own, or partly reduced).
  constexpr bool reduced_on_shard_only() const { return grad_reduction() != GradReduction::bucketed_all_reduce; }
  // Stage 1 with its buckets reduce-scattered (an all-reduce elsewhere: stage 0 updates every
  // parameter, stages 2 and 3 reduce-scatter per unit anyway).
  ZeroPolicy with_bucket_reduce(BucketReduce b) const {
    ZeroPolicy z = *this;
    z.bucket_ = stage_ == 1 ? b : BucketReduce::all_reduce;
    return z;
  }
  constexpr BucketReduce bucket_reduce() const { return bucket_; }
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
  BucketReduce bucket_ = BucketReduce::all_reduce;
};

constexpr int kZeroStages = 4;  // parallel.zero takes 0 .. kZeroStages - 1

// Whether `stage` names a ZeRO stage (a checkpoint's layout.zero is read before it is trusted).
constexpr bool is_zero_stage(int stage) { return stage >= 0 && stage < kZeroStages; }

// The policy of a stage (the recipe schema has already refused other values; here another
// value is an internal error).
inline ZeroPolicy zero_policy(int stage) {
  TRAINER_CHECK(is_zero_stage(stage),
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
