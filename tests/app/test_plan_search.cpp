// trainer plan --search: the enumeration is exactly the set of layouts the trainer's own recipe
// checks accept (less ZeRO with one data rank, which shards nothing); the step-time model's
// terms against their closed forms; the ranking; the production-size models.
#include <doctest/doctest.h>

#include "app/engine/options_from.h"
#include "app/engine/trainer.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "app/plan/flops.h"
#include "app/plan/plan_closed_form.h"
#include "app/plan/plan_search.h"
#include "app/recipe/recipe_checks.h"
#include "kernels/base/errors.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

using Key = std::tuple<int, int, int, int, int, int, int, int>;

Key key_of(const PlanLayout& l) {
  return {l.data, l.tensor, l.pipeline, l.zero, l.micro_batch, int(l.schedule), l.virtual_stages, int(l.recompute)};
}


SearchInput input_for(const GptConfig& c, int world, int global_batch, int seq_len, PlanDevice device) {
  SearchInput in;
  in.config = c;
  in.world = world;
  in.global_batch = global_batch;
  in.seq_len = seq_len;
  in.device = device_spec(device, world);
  const bool gpu = device != PlanDevice::cpu;
  in.peak_flops = device_peak(gpu ? Device::cuda : Device::cpu, in.device.name, gpu ? DType::bf16 : DType::f32, 0).flops;
  in.act_bytes = device == PlanDevice::cpu ? 4 : 2;
  in.memory_limit = in.device.memory_bytes;
  in.host = device == PlanDevice::cpu ? HostTransients::cpu_path : HostTransients::none;
  return in;
}

}  // namespace

TEST_CASE("plan: the search enumerates exactly the layouts the trainer's checks accept") {
  Recipe base;
  base.path = "<test>";
  base.model.n_layer = 6;
  base.model.n_head = 6;
  base.model.d_model = 48;
  base.model.vocab_size = 257;
  base.model.vocab_multiple = 4;  // padded 260 = 4 x 5 x 13: tensor 3 and 6 divide n_head but not it
  base.model.seq_len = 16;
  base.data.tokenizer = "byte";
  base.train.device = DeviceChoice::cpu;
  base.train.seq_len = 16;
  base.train.global_batch = 12;
  for (int world : {1, 2, 4, 6, 8, 12}) {
    std::set<Key> accepted;
    for (int d = 1; d <= world; ++d)
      for (int t = 1; t <= world; ++t)
        for (int p = 1; p <= world; ++p) {
          if (d * t * p != world) continue;
          for (int zero = 0; zero <= 3; ++zero)
            for (int mb = 1; mb <= base.train.global_batch; ++mb)
              for (auto [s, v] : {std::pair{Schedule::gpipe, 1}, std::pair{Schedule::one_f_one_b, 1},
                                  std::pair{Schedule::interleaved, 2}, std::pair{Schedule::interleaved, 4},
                                  std::pair{Schedule::zero_bubble, 1}})
                for (Recompute rc : {Recompute::none, Recompute::block}) {
                  // No schedule without stages; ZeRO with one data rank shards nothing. The
                  // search tries 2 and 4 virtual stages (the recipe also takes others).
                  if (p == 1 && s != Schedule::one_f_one_b) continue;
                  if (d == 1 && zero > 0) continue;
                  Recipe r = base;
                  r.parallel.data = d;
                  r.parallel.tensor = t;
                  r.parallel.pipeline = p;
                  r.parallel.zero = zero;
                  r.parallel.schedule = s;
                  r.parallel.virtual_stages = v;
                  r.train.micro_batch = mb;
                  r.train.recompute = rc;
                  try {
                    check_recipe(r, KeyOrigins{"<test>", {}});
                    check_layout(r, world);
                  } catch (const ConfigError&) {
                    continue;
                  }
                  accepted.insert({d, t, p, zero, mb, int(s), v, int(rc)});
                }
        }
    const std::vector<PlanLayout> layouts =
        enumerate_layouts(input_for(gpt_config_from(base), world, base.train.global_batch, 16, PlanDevice::cpu));
    std::set<Key> enumerated;
    for (const PlanLayout& l : layouts) enumerated.insert(key_of(l));
    CAPTURE(world);
    CHECK(enumerated.size() == layouts.size());  // no duplicates
    CHECK(enumerated == accepted);
  }
}

TEST_CASE("plan: step-time model terms") {
  GptConfig c = testing::gpt_config(4, 4, 64, 257, 320, 32);
  DeviceSpec dev = device_spec(PlanDevice::h100, 8);
  const double peak = 1e12;
  PlanLayout l;
  l.micro_batch = 2;
  l.global_batch = 8;
  l.seq_len = 32;

  // Stage FLOPs add up to flops.h's 6N + 6LTC per token.
  double sum = 0;
  for (int s = 0; s < 4; ++s) sum += stage_flops_per_token(c, 32, 1, s == 3);
  CHECK(sum == doctest::Approx(flops_per_token(c, 32)).epsilon(1e-12));

  // One rank: compute at MFU x peak, then the optimizer; nothing else.
  StepEstimate one = estimate_step(c, l, dev, peak, 2);
  const double tokens = 8.0 * 32;
  CHECK(one.forward_s + one.backward_s == doctest::Approx(flops_per_token(c, 32) * tokens / (dev.mfu * peak)));
  CHECK(one.backward_s == doctest::Approx(2 * one.forward_s));
  CHECK(one.tp_comm_s == 0);
  CHECK(one.dp_comm_s == 0);
  CHECK(one.bubble_s == 0);
  CHECK(one.step_s == doctest::Approx(one.forward_s + one.backward_s + one.optimizer_s));
  CHECK(one.tokens_per_s == doctest::Approx(tokens / one.step_s));
  CHECK(one.mfu == doctest::Approx(flops_per_token(c, 32) * one.tokens_per_s / peak));

  // Recomputing blocks adds one forward of the blocks to the backward.
  l.recompute = Recompute::block;
  StepEstimate rc = estimate_step(c, l, dev, peak, 2);
  CHECK(rc.backward_s - one.backward_s ==
        doctest::Approx(stage_recompute_flops_per_token(c, 32, 4) * tokens / (dev.mfu * peak)));
  l.recompute = Recompute::none;

  // Pipeline: (p - 1) extra micro-batch times of the slowest stage.
  l.pipeline = 2;
  StepEstimate pp = estimate_step(c, l, dev, peak, 2);
  const int m = l.grad_accum();
  const double micro = (pp.forward_s + pp.backward_s + pp.tp_comm_s + pp.p2p_s) / m;
  CHECK(pp.bubble_s == doctest::Approx(micro));
  CHECK(pp.p2p_s > 0);
  CHECK(pp.slowest_stage == 1);  // the head makes the last stage slower

  // Tensor parallel within a node: 4 all-reduces per layer and micro-batch, +1 for the embedding
  // on stage 0 (with one stage also the head's and its two small statistics).
  l.pipeline = 1;
  l.tensor = 4;
  StepEstimate tp = estimate_step(c, l, dev, peak, 2);
  const double msg = 2.0 * 32 * 64 * 2;  // (B, T, C) bf16
  auto ar = [&](double bytes) { return 2.0 * 3 / 4 * bytes / dev.intra_bytes_per_s + 2.0 * 3 * dev.intra_latency_s; };
  CHECK(tp.tp_comm_s ==
        doctest::Approx(l.grad_accum() * ((4 * 4 + 2) * ar(msg) + ar(2.0 * 32 * 4) + ar(2.0 * 32 * 8))));
  CHECK(tp.forward_s == doctest::Approx(one.forward_s / 4));

  // ZeRO-1 over 4 data ranks, compute made negligible so the gradient reduction is all exposed:
  // all-reduced buckets cost a ring all-reduce of the gradients, reduce-scattered ones (GPUs)
  // half of it; the parameters' all-gather after the step is the same in both.
  l.tensor = 1;
  l.data = 4;
  l.zero = 1;
  const double grads = double(plan_units_closed_form(c, ParallelDims{4, 1, 1}, 0, {}).total()) * 4;
  auto ring = [&](double bytes, double factor) {
    return factor * 3 / 4 * bytes / dev.intra_bytes_per_s + factor * 3 * dev.intra_latency_s;
  };
  const StepEstimate ar1 = estimate_step(c, l, dev, 1e30, 2);
  l.bucket_reduce = BucketReduce::reduce_scatter;
  const StepEstimate rs1 = estimate_step(c, l, dev, 1e30, 2);
  CHECK(ar1.dp_comm_s - rs1.dp_comm_s == doctest::Approx(ring(grads, 2) - ring(grads, 1)));
  CHECK(rs1.dp_comm_s > 0);

  // bf16 gradient reductions: half the reduction's bytes, plus the casts on the compute stream
  // (6 bytes an element into bf16, 6 back for what the rank keeps: all of it after an
  // all-reduce, its shard after a reduce-scatter).
  const double P = grads / 4;
  l.grad_reduce_dtype = DType::bf16;
  const StepEstimate rs1_bf16 = estimate_step(c, l, dev, 1e30, 2);
  CHECK(rs1.dp_comm_s - rs1_bf16.dp_comm_s ==
        doctest::Approx(ring(grads, 1) - ring(grads / 2, 1) - 6 * (P + P / 4) / dev.hbm_bytes_per_s));
  l.bucket_reduce = BucketReduce::all_reduce;
  const StepEstimate ar1_bf16 = estimate_step(c, l, dev, 1e30, 2);
  CHECK(ar1.dp_comm_s - ar1_bf16.dp_comm_s ==
        doctest::Approx(ring(grads, 2) - ring(grads / 2, 2) - 6 * (2 * P) / dev.hbm_bytes_per_s));
  // ZeRO 2 reduces every micro-batch, so it casts every micro-batch.
  l.zero = 2;
  l.micro_batch = 1;
  REQUIRE(l.grad_accum() == 2);
  const StepEstimate z2_bf16 = estimate_step(c, l, dev, 1e30, 2);
  l.grad_reduce_dtype = DType::f32;
  const StepEstimate z2 = estimate_step(c, l, dev, 1e30, 2);
  CHECK(z2.dp_comm_s - z2_bf16.dp_comm_s ==
        doctest::Approx(l.grad_accum() * (ring(grads, 1) - ring(grads / 2, 1) - 6 * (P + P / 4) / dev.hbm_bytes_per_s)));
  // ZeRO-1's after-step all-gather: with compute negligible all of it shows (above); with a
  // forward that outlasts it, a GPU run hides it behind the next step's forward and the
  // gradient reduction behind the backward, while the CPU path waits for it in the step.
  l.zero = 1;
  l.micro_batch = 2;
  l.grad_reduce_dtype = DType::f32;
  l.bucket_reduce = BucketReduce::reduce_scatter;
  CHECK(estimate_step(c, l, dev, 1e9, 2).dp_comm_s == 0);
  l.bucket_reduce = BucketReduce::all_reduce;
  CHECK(estimate_step(c, l, device_spec(PlanDevice::cpu, 8), 1e9, 2).dp_comm_s > 0);
  // One data rank reduces nothing: the dtype changes nothing.
  l.data = 1;
  l.zero = 0;
  const StepEstimate one_f32 = estimate_step(c, l, dev, peak, 2);
  l.grad_reduce_dtype = DType::bf16;
  CHECK(estimate_step(c, l, dev, peak, 2).step_s == one_f32.step_s);
}

TEST_CASE("plan: node placement of groups follows the rank order (tensor fastest)") {
  CHECK(groups_within_node(1, 8, 64, 8));    // tensor 8
  CHECK(!groups_within_node(1, 16, 64, 8));  // tensor 16 spans 2 nodes
  CHECK(!groups_within_node(1, 3, 12, 8));   // tensor 3: ranks 6-8 cross a node boundary
  CHECK(groups_within_node(2, 4, 64, 8));    // data 4 after tensor 2
  CHECK(!groups_within_node(8, 2, 64, 8));   // data 2 after tensor 8
  CHECK(pairs_within_node(4, 4, 8));         // stages 0 and 1 of 4 ranks each share a node
  CHECK(!pairs_within_node(8, 8, 8));
}

TEST_CASE("plan: ranking puts layouts that fit first, then the fastest") {
  GptConfig c = testing::gpt_config(12, 12, 768, 50257, 50304, 1024);
  SearchInput in = input_for(c, 8, 64, 1024, PlanDevice::a100);
  in.memory_limit = int64_t(4) << 30;  // so that some layouts do not fit
  const std::vector<PlanCandidate> ranked = search_layouts(in);
  REQUIRE(ranked.size() > 10);
  bool seen_unfit = false;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const PlanCandidate& p = ranked[i];
    CHECK(p.fits == (p.needed_bytes <= in.memory_limit));
    if (!p.fits) seen_unfit = true;
    CHECK(!(seen_unfit && p.fits));
    if (i > 0 && ranked[i - 1].fits == p.fits) CHECK(ranked[i - 1].time.step_s <= p.time.step_s);
  }
  CHECK(seen_unfit);
  CHECK(ranked.front().fits);
}

TEST_CASE("plan: GPT-3 175B on 1024 A100s and a 1T model on 3072") {
  GptConfig gpt3;
  gpt3.n_layer = 96;
  gpt3.n_head = 96;
  gpt3.d_model = 12288;
  gpt3.padded_vocab = 50304;
  gpt3.max_seq_len = 2048;
  const std::vector<PlanCandidate> a = search_layouts(input_for(gpt3, 1024, 1536, 2048, PlanDevice::a100));
  REQUIRE(!a.empty());
  CHECK(a.front().fits);
  // Without sharding or splitting, 175B parameters (16 bytes each with Adam) cannot fit.
  for (const PlanCandidate& p : a)
    if (p.layout.tensor == 1 && p.layout.pipeline == 1 && p.layout.zero == 0) CHECK(!p.fits);
  GptConfig big = gpt3;
  big.n_layer = 128;
  big.n_head = 160;
  big.d_model = 25600;
  CHECK(double(big.num_params()) > 1e12);
  const std::vector<PlanCandidate> b = search_layouts(input_for(big, 3072, 3072, 2048, PlanDevice::a100));
  REQUIRE(!b.empty());
  CHECK(b.front().fits);
  CHECK(b.front().layout.world() == 3072);
}
