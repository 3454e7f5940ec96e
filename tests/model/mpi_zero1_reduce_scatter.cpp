// ranks: 2 4
// ZeRO-1 over real MPI ranks in the two forms GPU runs take. Buckets reduce-scattered in place:
// MpiComm's in-place reduce-scatter gives its out-of-place result, and a ParamStore stepping
// with it ends with the weights and gradient norms of one stepping with all-reduce (bit for
// bit where the data group has 2 ranks, whose sums are a + b; to rounding on 4, where MPI may
// add in another order). On 4 ranks the same holds where only the shard is summed after the
// data group's reduction: the tied embedding between two pipeline stages, and the replicated
// parameters' partial gradients over a tensor group (sequence parallelism). After-step
// all-gathers left in flight until the next forward acquires each unit: bit for bit the
// weights and norms of gathers waited for in the step.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/base/range.h"
#include "kernels/cpu/cpu_backend.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/mpi_comm.h"
#include "parallel/process_grid.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

Tensor host_f32(std::vector<float>& v) {
  Tensor t;
  t.data = v.data();
  t.dtype = DType::f32;
  t.device = Device::cpu;
  t.ndim = 1;
  t.shape[0] = int64_t(v.size());
  return t;
}

// values is the same on every rank of `group`, bit for bit.
void require_equal_over(Comm& group, const std::vector<float>& values) {
  std::vector<float> lo = values, hi = values;
  group.all_reduce(host_f32(hi), ReduceOp::max);
  for (float& x : lo) x = -x;
  group.all_reduce(host_f32(lo), ReduceOp::max);
  for (size_t i = 0; i < lo.size(); ++i) REQUIRE(-lo[i] == hi[i]);
}

struct Trained {
  std::vector<std::vector<float>> weights;  // per local unit, after the last step
  std::vector<double> norms;                // the world's squared gradient norm per step
  std::vector<std::vector<float>> values;   // per local parameter, read right after the last step
};

// Three steps of AdamW with rank- and step-dependent gradients on the grid `dims` of `world`.
// Each step first acquires every unit, as a forward does, and its gradients read the weights
// it got (so a weight read before its all-gather completed changes the result).
Trained train(Comm& world, const ParallelDims& dims, BucketReduce reduce, GatherWait wait = GatherWait::in_step) {
  ProcessGrid grid(world, dims);
  std::unique_ptr<Backend> backend = make_cpu_backend();
  LayoutOptions o;
  o.dims = dims;
  o.at = grid.coords();
  const GptConfig config = testing::tiny_gpt_config();
  REQUIRE(config.tied());
  const StageLayout layout(config, o);
  // Small buckets, so several buckets of several units each are in flight.
  ParamStore store(layout, *backend, grid.dp(), grid.embed(), zero_policy(1).with_bucket_reduce(reduce),
                   2000.0 / (1024 * 1024));
  if (dims.tensor_parallel()) store.set_tensor_partial_grads(&grid.tp(), TpPartialGrads::all_replicated);
  store.set_gather_wait(wait);
  store.init_random(11);
  const int units = int(layout.units().size());
  Trained out;
  for (int step = 1; step <= 3; ++step) {
    store.zero_grads();
    std::vector<std::vector<float>> seen;  // the weights the step's forward acquired
    for (int u = 0; u < units; ++u) {
      Tensor t = store.acquire(u);
      seen.emplace_back(t.ptr<float>(), t.ptr<float>() + t.numel());
      store.release(u);
    }
    for (int micro = 0; micro < 2; ++micro) {
      store.begin_micro(micro == 1);
      for (int u = units - 1; u >= 0; --u) {
        Tensor g = store.grads(u);
        float* p = g.ptr<float>();
        for (int64_t i = 0; i < g.numel(); ++i)
          p[i] += std::sin(0.37f * float(i) + 1.3f * float(world.rank()) + 0.7f * float(step + micro) + float(u)) * 1e-2f +
                  0.1f * seen[size_t(u)][size_t(i)];
        store.grads_done(u);
      }
    }
    store.finish_grads();
    // As Trainer sums it: f32 over the world.
    std::vector<float> sq{float(store.grad_sq_norm())};
    world.all_reduce(host_f32(sq), ReduceOp::sum);
    out.norms.push_back(double(sq[0]));
    AdamWStep a;
    a.lr = 1e-2f;
    a.weight_decay = 0.1f;
    a.step = step;
    store.optimizer_step(a);
  }
  // Read before any acquire: with gathers waited on first use, still in flight here.
  for (const LocalParam& p : layout.params()) out.values.push_back(store.local_values(p));
  for (int u = 0; u < units; ++u) {
    Tensor t = store.acquire(u);
    out.weights.emplace_back(t.ptr<float>(), t.ptr<float>() + t.numel());
    store.release(u);
  }
  if (Comm* embed = grid.embed()) {
    // Both stages stepped their copy of the tied embedding with one gradient.
    const int unit = layout.has_embedding() ? layout.unit_wte() : layout.unit_head_wte();
    require_equal_over(*embed, out.weights[size_t(unit)]);
  }
  if (dims.tensor > 1) {
    // Every tensor rank stepped its replicated parameters with the group's summed gradient.
    // Some of them straddle a shard boundary, so the shard-only sum cuts a parameter.
    int straddling = 0;
    for (const LocalUnit& u : layout.units()) {
      for (int pi : u.params) {
        const LocalParam& p = layout.params()[size_t(pi)];
        if (layout.spec(p).split != TpSplit::none) continue;
        const Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
        const Range in_shard = intersect(pr, u.shard);
        if (!in_shard.empty() && in_shard.size() < pr.size()) ++straddling;
        const std::vector<float>& w = out.weights[size_t(p.unit)];
        require_equal_over(grid.tp(), std::vector<float>(w.begin() + pr.begin, w.begin() + pr.end));
      }
    }
    REQUIRE(straddling > 0);
  }
  return out;
}

// Reduce-scatter against all-reduce on one grid: equal weights and norms, bit for bit when the
// data group has 2 ranks.
void check_grid(Comm& world, const ParallelDims& dims) {
  const Trained all = train(world, dims, BucketReduce::all_reduce);
  const Trained rs = train(world, dims, BucketReduce::reduce_scatter);
  REQUIRE(all.weights.size() == rs.weights.size());
  double worst = 0;
  for (size_t u = 0; u < all.weights.size(); ++u) {
    REQUIRE(all.weights[u].size() == rs.weights[u].size());
    for (size_t i = 0; i < all.weights[u].size(); ++i)
      worst = std::max(worst, double(std::fabs(all.weights[u][i] - rs.weights[u][i])));
  }
  REQUIRE(all.norms.size() == rs.norms.size());
  double worst_norm = 0;
  for (size_t s = 0; s < all.norms.size(); ++s) {
    CHECK(all.norms[s] > 0);
    worst_norm = std::max(worst_norm, std::fabs(all.norms[s] - rs.norms[s]) / all.norms[s]);
  }
  if (dims.data == 2) {
    CHECK(worst == 0.0);
    CHECK(worst_norm == 0.0);
  } else {
    CHECK(worst < 1e-6);
    CHECK(worst_norm < 1e-6);
  }
}

}  // namespace

TEST_CASE("MpiComm: an in-place reduce-scatter gives the out-of-place result and leaves the other blocks") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  const int n = world.size(), r = world.rank();
  constexpr int64_t kBlock = 1000;
  std::vector<float> in(size_t(n * kBlock));
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.01f * float(i) + float(r)) / 3.0f;
  std::vector<float> whole = in;
  std::vector<float> out(static_cast<size_t>(kBlock));
  world.reduce_scatter(host_f32(out), host_f32(in));
  Tensor w = host_f32(whole);
  world.reduce_scatter_async(w.flat(r * kBlock, (r + 1) * kBlock), w)->wait();
  CHECK(std::memcmp(whole.data() + r * kBlock, out.data(), size_t(kBlock) * 4) == 0);
  for (int b = 0; b < n; ++b)
    if (b != r) CHECK(std::memcmp(whole.data() + b * kBlock, in.data() + b * kBlock, size_t(kBlock) * 4) == 0);
}

// GatherWait::on_first_use (NCCL's default) leaves the after-step all-gathers in flight until
// the next forward acquires each unit: the same weights and norms, bit for bit.
TEST_CASE("ParamStore zero 1: all-gathers waited on first use step to the weights of gathers waited in the step") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  ParallelDims dims;
  dims.data = world.size();
  for (const BucketReduce reduce : {BucketReduce::all_reduce, BucketReduce::reduce_scatter}) {
    const Trained in_step = train(world, dims, reduce, GatherWait::in_step);
    const Trained on_use = train(world, dims, reduce, GatherWait::on_first_use);
    CHECK(in_step.weights == on_use.weights);
    CHECK(in_step.norms == on_use.norms);
    CHECK(in_step.values == on_use.values);
  }
}

TEST_CASE("ParamStore zero 1: reduce-scattered buckets step to the all-reduced weights") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  ParallelDims dims;
  dims.data = world.size();
  check_grid(world, dims);
}

// Where only the shard is summed after the data group's reduction: the tied embedding between
// two pipeline stages, and the replicated parameters' partial gradients over a tensor group.
TEST_CASE("ParamStore zero 1: reduce-scatter with the tied embedding across stages and tensor-partial gradients") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  if (world.size() != 4) {
    MESSAGE("needs 4 ranks (data 2 x pipeline 2, data 2 x tensor 2); this run has ", world.size());
    return;
  }
  for (const int pipeline : {2, 1}) {
    CAPTURE(pipeline);
    ParallelDims dims;
    dims.data = 2;
    dims.pipeline = pipeline;
    dims.tensor = 4 / (2 * pipeline);
    check_grid(world, dims);
  }
}
