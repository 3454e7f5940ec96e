// The recipe -> component options translation (app/engine/options_from.h): auto resolution and
// the fields each component reads.
#include <doctest/doctest.h>

#include "app/engine/options_from.h"
#include "app/plan/rank_options.h"
#include "tests/app/test_recipe_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("precision auto is bf16 on CUDA and fp32 on the CPU, an explicit choice stays") {
  Recipe r;
  r.train.precision = PrecisionChoice::auto_detect;
  CHECK(precision_from(r, Device::cuda) == Precision::bf16);
  CHECK(precision_from(r, Device::cpu) == Precision::fp32);
  r.train.precision = PrecisionChoice::fp32;
  CHECK(precision_from(r, Device::cuda) == Precision::fp32);
  r.train.precision = PrecisionChoice::bf16;
  CHECK(precision_from(r, Device::cpu) == Precision::bf16);
  r.train.device = DeviceChoice::cpu;
  CHECK(device_from(r) == Device::cpu);
  r.train.device = DeviceChoice::cuda;
  CHECK(device_from(r) == Device::cuda);
}

TEST_CASE("options_from copies the recipe's fields into each component's options") {
  Recipe r = load_recipe_text(
      "data: {train: \"x/*.bin\", val: \"y/*.bin\"}\n"
      "parallel: {data: 2, tensor: 1, pipeline: 2, zero: 1}\n"
      "model: {n_layer: 4, n_head: 2, d_model: 32, vocab_size: 50304, seq_len: 16}\n"
      "train: {device: cpu, micro_batch: 2, seq_len: 16, global_batch: 8, steps: 10, seed: 7,\n"
      "        optimizer: {lr: 0.01, grad_clip: 1.0}, lr_schedule: {kind: cosine, warmup_steps: 3}}\n"
      "eval: {every: 5, batches: 4}\n");
  const GridCoords c{1, 0, 1};
  // What the rank at c builds: through the recipe's plan layout, as the planner's dry run does.
  const RankOptions ro = rank_options(plan_layout_from(r, Device::cpu), c);
  const LayoutOptions& lo = ro.layout;
  CHECK(lo.at.dp == 1);
  CHECK(lo.dims.data == 2);
  CHECK(lo.at.pp == 1);
  CHECK(lo.dims.pipeline == 2);
  CHECK(lo.dims.tensor == 1);
  const StageOptions& so = ro.stage;
  CHECK(so.n_slots == max_in_flight(PipeShape{Schedule::one_f_one_b, 2, 2, 1}, 1));
  CHECK(so.dloss == doctest::Approx(1.0 / (8.0 * 16.0)));
  CHECK(so.split == BackwardSplit::whole);
  const LrSchedule s = lr_schedule_from(r);
  CHECK(s.max_lr == doctest::Approx(0.01));
  CHECK(s.warmup_steps == 3);
  CHECK(s.total_steps == 10);
  const LoaderOptions tl = train_loader_options_from(r, c);
  const std::vector<LoaderOptions> vls = val_loader_options_from(r, c);
  REQUIRE(vls.size() == 1);
  const LoaderOptions& vl = vls[0];
  CHECK(tl.sources == single_source("x/*.bin"));
  CHECK(tl.grad_accum == r.grad_accum());
  CHECK(tl.dp_rank == 1);
  CHECK(tl.vocab_size == 50304);
  CHECK(tl.shuffle == Shuffle::on);
  CHECK(vl.sources == single_source("y/*.bin"));
  CHECK(vl.grad_accum == 2);
  CHECK(vl.shuffle == Shuffle::off);
  const StepOptions st = step_options_from(r);
  CHECK(st.grad_accum == r.grad_accum());
  CHECK(st.eval_micro_batches == 2);
  CHECK(st.val_weights == std::vector<double>{1.0});
  const AdamWStep h = adamw_step(st, 0.005, 4.0, 2);
  CHECK(h.lr == doctest::Approx(0.005));
  CHECK(h.grad_scale == doctest::Approx(1.0 / (4.0 + 1e-6)));
  CHECK(h.step == 2);
  const CkptManifest m = manifest_from(r);
  CHECK(m.seed == 7);
  CHECK(m.dims.pipeline == 2);
  CHECK(m.stage_layers == std::vector<int>{2, 2});
  CHECK(m.model.n_layer == 4);
  const PlanLayout pl = plan_layout_from(r, Device::cpu);
  CHECK(pl.world() == 4);
  CHECK(pl.zero == 1);
  CHECK(pl.grad_accum() == r.grad_accum());
  // ZeRO-1 reduce-scatters its buckets on GPUs only; the CPU path all-reduces them.
  CHECK(pl.zero_policy().grad_reduction() == GradReduction::bucketed_all_reduce);
  CHECK(plan_layout_from(r, Device::cuda).zero_policy().grad_reduction() == GradReduction::bucketed_reduce_scatter);
  CHECK(ro.zero.grad_reduction() == GradReduction::bucketed_all_reduce);
  CHECK(rank_options(plan_layout_from(r, Device::cuda), c).zero.grad_reduction() ==
        GradReduction::bucketed_reduce_scatter);
  CHECK(backend_options_from(r, 5).local_rank == 5);
  CHECK(backend_options_from(r, 0).precision == Precision::fp32);
}
