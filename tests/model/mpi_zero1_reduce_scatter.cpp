// ranks: 2 4
// ZeRO-1 with its buckets reduce-scattered in place (what GPU runs take) over real MPI ranks:
// MpiComm's in-place reduce-scatter gives its out-of-place result, and a ParamStore stepping
// with it ends with the weights of one stepping with all-reduce (bit for bit on 2 ranks, where
// both sums are a + b; to rounding on 4, where MPI may add in another order).
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/mpi_comm.h"
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

// The weights after three steps of AdamW with rank- and step-dependent gradients.
std::vector<std::vector<float>> train(MpiComm& dp, BucketReduce reduce) {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  LayoutOptions o;
  o.dp_rank = dp.rank();
  o.dp = dp.size();
  const StageLayout layout(testing::tiny_gpt_config(), o);
  // Small buckets, so several buckets of several units each are in flight.
  ParamStore store(layout, *backend, dp, nullptr, zero_policy(1).with_bucket_reduce(reduce), 2000.0 / (1024 * 1024));
  store.init_random(11);
  const int units = int(layout.units().size());
  for (int step = 1; step <= 3; ++step) {
    store.zero_grads();
    for (int micro = 0; micro < 2; ++micro) {
      store.begin_micro(micro == 1);
      for (int u = units - 1; u >= 0; --u) {
        Tensor g = store.grads(u);
        float* p = g.ptr<float>();
        for (int64_t i = 0; i < g.numel(); ++i)
          p[i] += std::sin(0.37f * float(i) + 1.3f * float(dp.rank()) + 0.7f * float(step + micro) + float(u)) * 1e-2f;
        store.grads_done(u);
      }
    }
    store.finish_grads();
    AdamWStep a;
    a.lr = 1e-2f;
    a.weight_decay = 0.1f;
    a.step = step;
    store.optimizer_step(a);
  }
  std::vector<std::vector<float>> out;
  for (int u = 0; u < units; ++u) {
    Tensor t = store.acquire(u);
    out.emplace_back(t.ptr<float>(), t.ptr<float>() + t.numel());
    store.release(u);
  }
  return out;
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

TEST_CASE("ParamStore zero 1: reduce-scattered buckets step to the all-reduced weights") {
  MpiComm world(MPI_COMM_WORLD, "data", 60);
  const std::vector<std::vector<float>> all = train(world, BucketReduce::all_reduce);
  const std::vector<std::vector<float>> rs = train(world, BucketReduce::reduce_scatter);
  REQUIRE(all.size() == rs.size());
  double worst = 0;
  for (size_t u = 0; u < all.size(); ++u) {
    REQUIRE(all[u].size() == rs[u].size());
    for (size_t i = 0; i < all[u].size(); ++i) worst = std::max(worst, double(std::fabs(all[u][i] - rs[u][i])));
  }
  if (world.size() == 2) CHECK(worst == 0.0);
  else CHECK(worst < 1e-6);
}
