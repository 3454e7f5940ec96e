// ranks: 2 4
// parallel.grad_reduce_dtype: bf16 over real MPI ranks. MpiComm sums bf16 (each pairwise add
// in f32, rounded to nearest even); ParamStore's reductions under every ZeRO stage carry bf16:
// on 2 data ranks each reduced gradient is exactly f32(bf16(bf16(a) + bf16(b))) of the two
// ranks' f32 accumulators (per micro-batch under ZeRO 2 and 3); on 4, within bf16 rounding of
// the f32 sum. Element by element: the whole-gradient buffer where it holds the sums (ZeRO
// 0-1), and under every stage the owned elements as AdamW receives them (its first moment
// with beta1 = 0); and through the owned squared norm, to 1e-12.
// Training with it is deterministic, close to fp32 reductions and not equal to them.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/base/bf16.h"
#include "kernels/cpu/cpu_backend.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/mpi_comm.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

constexpr int kMicro = 2;

float round_bf16(float x) { return f32_from_bf16(bf16_from_f32(x)); }

// The gradient rank r adds for element i of unit u in micro-batch `micro` of `step`: a
// multiple of 2^-18 below 2^-7, so the f32 accumulation is exact (the compiler may contract
// the test's adds into FMAs differently from the store's) and bf16 must round it.
float grad_value(int r, int step, int micro, int u, int64_t i) {
  const uint64_t h = uint64_t(i) * 2654435761u + uint64_t(r) * 97 + uint64_t(step) * 31 + uint64_t(micro) * 17 +
                     uint64_t(u) * 7919;
  return float(int64_t(h % 4001) - 2000) * 0x1p-18f;
}

// What rank r's accumulator holds for the element after the step's micro-batches (f32 adds
// in micro-batch order from zero, as backward accumulates).
float accumulated(int r, int step, int u, int64_t i) {
  float acc = 0;
  for (int micro = 0; micro < kMicro; ++micro) acc += grad_value(r, step, micro, u, i);
  return acc;
}

struct Rig {
  Rig(Comm& world, int zero, DType reduce, BucketReduce bucket)
      : backend(make_cpu_backend()),
        layout(testing::tiny_gpt_config(), options(world)),
        // Small buckets, so several buckets of several units each are in flight.
        store(layout, *backend, world, nullptr, zero_policy(zero).with_bucket_reduce(bucket), 2000.0 / (1024 * 1024),
              reduce) {
    store.init_random(11);
  }
  static LayoutOptions options(Comm& world) {
    LayoutOptions o;
    o.at.dp = world.rank();
    o.dims.data = world.size();
    return o;
  }
  // One step's micro-batches of backward and the reductions.
  void backward(int rank, int step) {
    store.zero_grads();
    const int units = int(layout.units().size());
    for (int micro = 0; micro < kMicro; ++micro) {
      store.begin_micro(micro == kMicro - 1);
      for (int u = units - 1; u >= 0; --u) {
        Tensor g = store.grads(u);
        float* p = g.ptr<float>();
        for (int64_t i = 0; i < g.numel(); ++i) p[i] += grad_value(rank, step, micro, u, i);
        store.grads_done(u);
      }
    }
    store.finish_grads();
  }
  std::unique_ptr<Backend> backend;
  StageLayout layout;
  ParamStore store;
};

// Every ZeRO stage, and ZeRO 1 in both bucket forms (reduce-scatter is what GPUs take).
struct Form {
  int zero;
  BucketReduce bucket;
};
const Form kForms[] = {{0, BucketReduce::all_reduce},
                       {1, BucketReduce::all_reduce},
                       {1, BucketReduce::reduce_scatter},
                       {2, BucketReduce::all_reduce},
                       {3, BucketReduce::all_reduce}};

// The data group's reduced value of one element as a bf16 wire makes it on 2 ranks.
float bf16_pair_sum(float a, float b) { return round_bf16(round_bf16(a) + round_bf16(b)); }

// Counts the elements off their expected value (exact on 2 ranks, within `bound` on more) and
// keeps the first; a FAIL inside the loop would stop this rank alone, and the other would wait
// in the next collective until the communicator's timeout.
struct Mismatches {
  int64_t count = 0;
  std::string first;
  void add(float got, double want, double bound, int ranks, const std::string& where) {
    if (ranks == 2 ? got == float(want) : std::fabs(got - want) <= bound) return;
    if (count++ > 0) return;
    std::ostringstream text;
    text << std::setprecision(9) << where << ": " << got << " vs " << want;
    first = text.str();
  }
};

}  // namespace

TEST_CASE("MpiComm: bf16 sums, pairwise in f32 rounded to nearest even, and refuses bf16 max") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  const int n = world.size(), r = world.rank();
  constexpr int64_t kBlock = 257;
  // Small integers: every partial sum is exact in bf16, whatever order MPI adds in.
  std::vector<uint16_t> ints(size_t(n * kBlock));
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = bf16_from_f32(float(int(i % 13) - 6 + r));
  std::vector<uint16_t> summed = ints;
  world.all_reduce(make_tensor(summed.data(), DType::bf16, Device::cpu, {n * kBlock}), ReduceOp::sum);
  std::vector<uint16_t> mine(static_cast<size_t>(kBlock));
  world.reduce_scatter(make_tensor(mine.data(), DType::bf16, Device::cpu, {kBlock}),
                       make_tensor(ints.data(), DType::bf16, Device::cpu, {n * kBlock}));
  for (size_t i = 0; i < summed.size(); ++i) {
    float want = 0;
    for (int q = 0; q < n; ++q) want += float(int(i % 13) - 6 + q);
    REQUIRE(f32_from_bf16(summed[i]) == want);
    if (int64_t(i) / kBlock == r) REQUIRE(mine[i % size_t(kBlock)] == summed[i]);
  }
  // Rounding: on 2 ranks the sum of 1 and 2^-8 + 2^-16 is one add, rounded up to 1 + 2^-7;
  // 1 and 2^-8 tie and round to the even 1.
  if (n == 2) {
    uint16_t x[2] = {bf16_from_f32(r == 0 ? 1.0f : 0x1.02p-8f), bf16_from_f32(r == 0 ? 1.0f : 0x1p-8f)};
    world.all_reduce(make_tensor(x, DType::bf16, Device::cpu, {2}), ReduceOp::sum);
    CHECK(f32_from_bf16(x[0]) == 1.0f + 0x1p-7f);
    CHECK(f32_from_bf16(x[1]) == 1.0f);
  }
  uint16_t one = 0;
  CHECK_THROWS_WITH(world.all_reduce(make_tensor(&one, DType::bf16, Device::cpu, {1}), ReduceOp::max),
                    doctest::Contains("reduces f32 or i32 (and sums bf16), got bf16 for max"));
}

TEST_CASE("ParamStore: bf16 reductions give the bf16 sum of the ranks' f32 gradients under every ZeRO stage") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  const int n = world.size(), r = world.rank();
  for (const Form& f : kForms) {
    CAPTURE(f.zero);
    CAPTURE(int(f.bucket));
    Rig rig(world, f.zero, DType::bf16, f.bucket);
    rig.backward(r, 1);
    const ZeroPolicy zero = rig.store.zero();
    // The expected reduced value of element i of unit u, and a bound on its error on > 2 ranks.
    auto want = [&](int u, int64_t i, double* bound) {
      double exact = 0, mag = 0;
      float pair = 0;
      for (int micro = 0; micro < (zero.reduce_every_micro_batch() ? kMicro : 1); ++micro) {
        double term = 0;
        float vals[2] = {0, 0};
        for (int q = 0; q < n; ++q) {
          const float v = zero.reduce_every_micro_batch() ? grad_value(q, 1, micro, u, i) : accumulated(q, 1, u, i);
          if (q < 2) vals[q] = v;
          term += v;
          mag += std::fabs(v);
        }
        pair += bf16_pair_sum(vals[0], vals[1]);
        exact += term;
      }
      *bound = mag * 0x1p-5;  // n terms and n - 1 partial sums rounded, each by 2^-8 of mag at most
      return n == 2 ? double(pair) : exact;
    };
    if (zero.bucketed()) {
      // The whole-gradient buffer: every element (all-reduce) or this rank's shard is the sum.
      int64_t checked = 0;
      Mismatches bad;
      for (int u = 0; u < int(rig.layout.units().size()); ++u) {
        const LocalUnit& unit = rig.layout.units()[size_t(u)];
        Tensor g = rig.store.grads(u);
        const Range sum = zero.reduced_on_shard_only() ? unit.shard : Range{0, unit.padded};
        for (int64_t i = sum.begin; i < sum.end; ++i, ++checked) {
          double bound = 0;
          const double w = want(u, i, &bound);
          bad.add(g.ptr<float>()[i], w, bound, n, "unit " + std::to_string(u) + " element " + std::to_string(i));
        }
      }
      CHECK(checked > 0);
      CHECK_MESSAGE(bad.count == 0, bad.first);
    }
    // The squared norm of what this rank owns, against the same expectation.
    double want_sq = 0, bound_sq = 0;
    for (const LocalUnit& unit : rig.layout.units())
      for (int pi : unit.params) {
        const LocalParam& p = rig.layout.params()[size_t(pi)];
        const Range mine = intersect({p.offset - unit.offset, p.offset - unit.offset + p.numel}, unit.shard);
        for (int64_t i = mine.begin; i < mine.end; ++i) {
          double bound = 0;
          const double w = want(int(&unit - rig.layout.units().data()), i, &bound);
          want_sq += w * w;
          bound_sq += 2 * std::fabs(w) * bound + bound * bound;
        }
      }
    const double got_sq = rig.store.grad_sq_norm();
    CHECK(want_sq > 0);
    if (n == 2)
      CHECK(std::fabs(got_sq - want_sq) <= 1e-12 * want_sq);
    else
      CHECK(std::fabs(got_sq - want_sq) <= bound_sq + 1e-12 * want_sq);
    // Element by element under every stage, sharded accumulators included: with beta1 = 0 and
    // no clipping, AdamW's first moment after one step is the gradient it was given, bit for
    // bit (0 * m + 1 * g), and read_state reads this rank's owned slice of it.
    AdamWStep a;
    a.lr = 1e-3f;
    a.beta1 = 0;
    rig.store.optimizer_step(a);
    int64_t owned = 0;
    Mismatches bad;
    for (const LocalParam& p : rig.layout.params()) {
      const LocalUnit& unit = rig.layout.units()[size_t(p.unit)];
      const std::vector<float> m = rig.store.read_state(p, OptimizerState::m);
      const int64_t first = p.offset - unit.offset + rig.layout.owned_slice(p).begin;
      for (size_t k = 0; k < m.size(); ++k, ++owned) {
        double bound = 0;
        const double w = want(p.unit, first + int64_t(k), &bound);
        bad.add(m[k], w, bound, n, "parameter " + std::to_string(p.spec) + " owned element " + std::to_string(k));
      }
    }
    CHECK(owned > 0);
    CHECK_MESSAGE(bad.count == 0, bad.first);
  }
}

TEST_CASE("ParamStore: training with bf16 reductions is deterministic and close to fp32 reductions") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  for (const Form& f : kForms) {
    const int zero = f.zero;
    CAPTURE(zero);
    CAPTURE(int(f.bucket));
    auto train = [&](DType reduce) {
      Rig rig(world, zero, reduce, f.bucket);
      for (int step = 1; step <= 3; ++step) {
        rig.backward(world.rank(), step);
        AdamWStep a;
        a.lr = 1e-2f;
        a.weight_decay = 0.1f;
        a.step = step;
        rig.store.optimizer_step(a);
      }
      std::vector<float> w;
      for (int u = 0; u < int(rig.layout.units().size()); ++u) {
        Tensor t = rig.store.acquire(u);
        w.insert(w.end(), t.ptr<float>(), t.ptr<float>() + t.numel());
        rig.store.release(u);
      }
      return w;
    };
    const std::vector<float> bf16 = train(DType::bf16), again = train(DType::bf16), f32 = train(DType::f32);
    REQUIRE(bf16.size() == f32.size());
    CHECK(bf16 == again);
    double worst = 0, mean = 0;
    for (size_t i = 0; i < bf16.size(); ++i) {
      worst = std::max(worst, double(std::fabs(bf16[i] - f32[i])));
      mean += std::fabs(bf16[i] - f32[i]) / double(bf16.size());
    }
    MESSAGE("zero ", zero, ": bf16 vs fp32 reductions, largest weight difference ", worst, ", mean ", mean);
    // Each AdamW step moves a weight by about lr (1e-2), whatever the gradient's size, so where a
    // gradient sums to nearly 0 the rounding may flip its step (the largest difference is about
    // lr); on average bf16-rounded gradients move the weights a small fraction of lr apart
    // (measured: 2e-5 to 4e-5). Some weights must differ, or bf16 was not used.
    CHECK(worst > 0);
    CHECK(mean < 1e-3);
  }
}
