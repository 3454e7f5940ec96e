// ZeroPolicy: every stage's named behaviours, the master weights' place for f32 and bf16 compute
// copies, and stages outside 0..3 refused.
#include <doctest/doctest.h>

#include <stdexcept>

#include "parallel/zero_policy.h"

using namespace trainer;

TEST_CASE("zero_policy: what each stage shards, how it reduces and gathers") {
  struct Row {
    int stage;
    bool optimizer, gradients, parameters, every_micro;
    GradReduction reduction;
    ParamGather gather;
  };
  const Row rows[] = {
      {0, false, false, false, false, GradReduction::bucketed_all_reduce, ParamGather::none},
      {1, true, false, false, false, GradReduction::bucketed_all_reduce, ParamGather::after_step},
      {2, true, true, false, true, GradReduction::per_unit_reduce_scatter, ParamGather::after_step},
      {3, true, true, true, true, GradReduction::per_unit_reduce_scatter, ParamGather::per_unit},
  };
  for (const Row& r : rows) {
    CAPTURE(r.stage);
    const ZeroPolicy z = zero_policy(r.stage);
    CHECK(z.stage() == r.stage);
    CHECK(z.shard_optimizer_state() == r.optimizer);
    CHECK(z.shard_gradients() == r.gradients);
    CHECK(z.shard_parameters() == r.parameters);
    CHECK(z.reduce_every_micro_batch() == r.every_micro);
    CHECK(z.grad_reduction() == r.reduction);
    CHECK(z.param_gather() == r.gather);
  }
}

TEST_CASE("zero_policy: only stage 1 takes a reduce-scatter of its buckets, which the GPU path chooses") {
  CHECK(bucket_reduce_on(Device::cuda) == BucketReduce::reduce_scatter);
  CHECK(bucket_reduce_on(Device::cpu) == BucketReduce::all_reduce);
  const GradReduction want[] = {GradReduction::bucketed_all_reduce, GradReduction::bucketed_reduce_scatter,
                                GradReduction::per_unit_reduce_scatter, GradReduction::per_unit_reduce_scatter};
  for (int stage = 0; stage < kZeroStages; ++stage) {
    CAPTURE(stage);
    const ZeroPolicy all = zero_policy(stage), rs = all.with_bucket_reduce(BucketReduce::reduce_scatter);
    CHECK(all.bucket_reduce() == BucketReduce::all_reduce);
    CHECK(rs.grad_reduction() == want[stage]);
    CHECK(rs.bucket_reduce() == (stage == 1 ? BucketReduce::reduce_scatter : BucketReduce::all_reduce));
    // Every other behaviour is the stage's.
    CHECK(rs.stage() == stage);
    CHECK(rs.bucketed() == all.bucketed());
    CHECK(rs.reduce_every_micro_batch() == all.reduce_every_micro_batch());
    CHECK(rs.param_gather() == all.param_gather());
    CHECK(rs.master_weights(DType::bf16) == all.master_weights(DType::bf16));
    CHECK(all.reduced_on_shard_only() == (stage >= 2));
    CHECK(rs.reduced_on_shard_only() == (stage >= 1));
    CHECK(rs.with_bucket_reduce(BucketReduce::all_reduce).grad_reduction() == all.grad_reduction());
  }
}

TEST_CASE("zero_policy: the fp32 master is the f32 compute copy unless parameters are sharded") {
  CHECK(zero_policy(0).master_weights(DType::f32) == MasterWeights::compute_copy);
  CHECK(zero_policy(1).master_weights(DType::f32) == MasterWeights::compute_copy);
  CHECK(zero_policy(2).master_weights(DType::f32) == MasterWeights::compute_copy);
  CHECK(zero_policy(3).master_weights(DType::f32) == MasterWeights::own_shard);
  CHECK(zero_policy(0).master_weights(DType::bf16) == MasterWeights::full_copy);
  CHECK(zero_policy(1).master_weights(DType::bf16) == MasterWeights::own_shard);
  CHECK(zero_policy(2).master_weights(DType::bf16) == MasterWeights::own_shard);
  CHECK(zero_policy(3).master_weights(DType::bf16) == MasterWeights::own_shard);
}

TEST_CASE("zero_policy: stages in order, and nothing outside 0..3") {
  std::vector<int> stages;
  for (ZeroPolicy z : all_zero_policies()) stages.push_back(z.stage());
  CHECK(stages == std::vector<int>{0, 1, 2, 3});
  CHECK_THROWS_AS(zero_policy(4), std::logic_error);
  CHECK_THROWS_AS(zero_policy(-1), std::logic_error);
}
