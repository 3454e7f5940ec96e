// ranks: 4
// trainer plan against a running trainer: for layouts of 4 ranks (data, tensor and pipeline
// parallel, ZeRO 0-3, every schedule (interleaved over 2 chunks), every recomputation mode,
// uneven and explicit stage splits, bf16 gradient reductions), after one training step every rank's planned total equals the bytes its Backend has
// allocated, and each figure equals the trainer's own (ParamStore::memory(),
// GptStage::activation_memory()). The plan is computed both by the dry run `trainer plan` uses
// and from the closed form the layout search uses.
#include <doctest/doctest.h>
#include <mpi.h>

#include "app/engine/trainer.h"
#include "app/plan/plan_closed_form.h"
#include "app/engine/options_from.h"
#include "app/plan/plan_dry_run.h"
#include "parallel/mpi_comm.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

struct Case {
  int data, tensor, pipeline, zero, accum;
  Schedule schedule;
  Recompute recompute;
  std::vector<int> stages;
  bool sequence_parallel = false;
  int virtual_stages = 1;
  GradReduceDType reduce = GradReduceDType::fp32;
};

void check_case(Comm& world, const Case& k) {
  TinyLayout tl;
  tl.data = k.data;
  tl.tensor = k.tensor;
  tl.pipeline = k.pipeline;
  tl.zero = k.zero;
  tl.sequence_parallel = k.sequence_parallel;
  tl.schedule = k.schedule;
  tl.virtual_stages = k.virtual_stages;
  tl.n_layer = k.virtual_stages > 1 ? 9 : 5;  // uneven over 2 and 4 (virtual) stages
  Recipe r = tiny_recipe("unused_*.bin", tl, k.accum);
  r.train.recompute = k.recompute;
  r.parallel.stages = k.stages;
  r.parallel.grad_reduce_dtype = k.reduce;
  Trainer t(r, world, 0, DataNeed::none);
  t.train_step();

  PlanLayout l;
  l.data = k.data;
  l.tensor = k.tensor;
  l.pipeline = k.pipeline;
  l.zero = k.zero;
  l.micro_batch = r.train.micro_batch;
  l.global_batch = r.train.global_batch;
  l.seq_len = r.train.seq_len;
  l.schedule = k.schedule;
  l.virtual_stages = k.virtual_stages;
  l.recompute = k.recompute;
  l.sequence_parallel = k.sequence_parallel;
  l.stage_layers = k.stages;
  l.grad_reduce_dtype = grad_reduce_dtype_from(r);
  const int stage = t.grid().coords().pp;
  const int64_t act = int64_t(dtype_size(t.backend().act_dtype()));
  const PlanRankMemory plan = plan_rank_memory(t.config(), l, stage, act, HostTransients::none);
  const PlanRankMemory closed = plan_rank_memory_closed_form(t.config(), l, stage, act, HostTransients::cpu_path);

  const RankMemory have = t.memory();
  CAPTURE(k.data);
  CAPTURE(k.tensor);
  CAPTURE(k.pipeline);
  CAPTURE(k.zero);
  CAPTURE(k.accum);
  CAPTURE(int(k.schedule));
  CAPTURE(k.virtual_stages);
  CAPTURE(int(k.recompute));
  CAPTURE(k.sequence_parallel);
  CAPTURE(int(k.reduce));
  CAPTURE(world.rank());
  CHECK(plan.total() == int64_t(t.backend().allocated_bytes()));
  CHECK(closed.total() == plan.total());
  CHECK(closed.peak() >= closed.total());
  CHECK(plan.staging == have.params.comm);
  CHECK(plan.store.master == have.params.master);
  CHECK(plan.store.grads == have.params.grads);
  CHECK(plan.store.optimizer == have.params.optimizer);
  // After a step ZeRO-3's gathered units are in the staging pool (comm), counted once.
  CHECK(plan.store.params == have.params.params);
  CHECK(plan.acts.per_slot == have.activations.per_slot);
  CHECK(plan.acts.slots == have.activations.slots);
  CHECK(plan.acts.scratch() == have.activations.scratch());
  CHECK(plan.acts.p2p == have.activations.p2p);
}

}  // namespace

TEST_CASE("plan's memory per rank equals what a running trainer allocates") {
  MpiComm world(MPI_COMM_WORLD, "world", 120);
  REQUIRE(world.size() == 4);
  const Schedule g = Schedule::gpipe, f = Schedule::one_f_one_b, il = Schedule::interleaved,
                 zb = Schedule::zero_bubble;
  const GradReduceDType bf16 = GradReduceDType::bf16;
  const Recompute none = Recompute::none, gelu = Recompute::gelu, block = Recompute::block;
  const std::vector<Case> cases = {
      {4, 1, 1, 0, 2, f, none, {}},  {4, 1, 1, 1, 1, f, gelu, {}},   {4, 1, 1, 2, 3, f, none, {}},
      {4, 1, 1, 3, 2, f, block, {}}, {2, 2, 1, 2, 2, f, gelu, {}},   {2, 2, 1, 3, 1, f, none, {}},
      {1, 4, 1, 0, 2, f, block, {}}, {1, 2, 2, 0, 3, g, none, {}},   {2, 1, 2, 2, 5, f, none, {}},
      {2, 1, 2, 2, 3, g, block, {}}, {1, 1, 4, 0, 6, f, block, {}},  {1, 1, 4, 1, 2, g, gelu, {1, 1, 2, 1}},
      {2, 1, 2, 1, 1, f, none, {4, 1}},
      // sequence parallelism
      {2, 2, 1, 1, 2, f, none, {}, true},  {1, 2, 2, 0, 3, g, block, {}, true}, {1, 4, 1, 2, 2, f, gelu, {}, true},
      // interleaved: 2 and 4 stages, 2 chunks each, ZeRO 0-2, an explicit virtual split
      {1, 1, 4, 0, 4, il, none, {}, false, 2},  {2, 1, 2, 2, 4, il, gelu, {}, false, 2},
      {2, 1, 2, 1, 2, il, block, {}, false, 2}, {1, 2, 2, 0, 4, il, none, {1, 2, 3, 3}, true, 2},
      // zero_bubble: the split backward's stash, weight passes completing the units (ZeRO 0-2)
      {1, 1, 4, 0, 6, zb, none, {}}, {2, 1, 2, 2, 3, zb, none, {}}, {2, 1, 2, 1, 4, zb, none, {}},
      {1, 2, 2, 0, 3, zb, none, {}, true},
      // bf16 gradient reductions: the bf16 copy of the gradients (ZeRO 0-1) and the units' bf16
      // copies in the pool (ZeRO 2-3)
      {4, 1, 1, 0, 2, f, none, {}, false, 1, bf16}, {4, 1, 1, 1, 1, f, none, {}, false, 1, bf16},
      {4, 1, 1, 2, 3, f, none, {}, false, 1, bf16}, {4, 1, 1, 3, 2, f, none, {}, false, 1, bf16},
      {2, 1, 2, 2, 3, zb, none, {}, false, 1, bf16}, {2, 2, 1, 1, 2, f, none, {}, true, 1, bf16},
  };
  for (const Case& k : cases) check_case(world, k);
}
