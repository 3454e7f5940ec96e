// ParamStore on one process as rank 1 of a simulated data-parallel group of 2: the store's shard
// ranges, gradient buckets and per-unit reduce-scatters, the gathers after the optimizer step
// (ZeRO 1) and on acquire (ZeRO 3), and its buffer sizes per stage. The fake group takes every
// other rank to hold this rank's gradients (all-reduce multiplies by the group size,
// reduce-scatter gives size x this rank's block) and, not knowing their parameters, gathers
// kMarker into their blocks, so the tests see exactly which elements this rank supplied.
// Model: tiny_gpt_config; with data 2 units are padded to multiples of 16 (unit_padded): wte
// 128, wpe 40 -> 48, h.0 and h.1 872 -> 880, ln_f 16 elements at offsets 0, 128, 176, 1056,
// 1936 (total 1952; the shard is the second half of each unit, 976 in all, of which 952 are
// parameters: 64, 16, 432, 432 and 8).
// One case runs the only rank of a data group of 1 at tensor 2, where the 460-parameter block
// units are padded to 464.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "model/param_store.h"
#include "model/param_table.h"
#include "model/stage_layout.h"
#include "tests/support/test_util.h"
#include "tests/support/tiny_gpt.h"
#include "tests/support/unused_comm.h"

using namespace trainer;
using trainer::testing::tiny_gpt_config;
using trainer::testing::UnusedComm;

namespace {

constexpr float kMarker = -7.0f;

class SimulatedDataGroup : public UnusedComm {
 public:
  struct Op {
    std::string kind;
    const float* out;
    int64_t out_n;
    const float* in;
    int64_t in_n;
  };

  SimulatedDataGroup(int rank, int size) : UnusedComm(rank, size, "data") {}
  InFlightCost in_flight_cost() const override { return cost; }

  CommRequestPtr all_gather_async(Tensor out, Tensor in) override {
    gather(out, in);
    record("all_gather", out, in);
    return start();
  }
  CommRequestPtr all_reduce_async(Tensor buf, ReduceOp op) override {
    REQUIRE(op == ReduceOp::sum);
    float* b = buf.ptr<float>();
    for (int64_t i = 0; i < buf.numel(); ++i) b[i] *= float(size());
    record("all_reduce", buf, buf);
    return start();
  }
  CommRequestPtr reduce_scatter_async(Tensor out, Tensor in) override {
    REQUIRE(in.numel() == size() * out.numel());
    const float* src = in.ptr<float>() + rank() * out.numel();
    for (int64_t i = 0; i < out.numel(); ++i) out.ptr<float>()[i] = float(size()) * src[i];
    record("reduce_scatter", out, in);
    return start();
  }

  std::vector<Op> ops;
  int in_flight = 0, max_in_flight = 0;
  InFlightCost cost = InFlightCost::buffer_copy;  // MPI's; none is NCCL's

 private:
  class Request : public CommRequest {
   public:
    explicit Request(SimulatedDataGroup& g) : g_(g) {}
    ~Request() override { Request::wait(); }
    void wait() override {
      if (!done_) g_.in_flight -= 1;
      done_ = true;
    }

   private:
    SimulatedDataGroup& g_;
    bool done_ = false;
  };

  void gather(Tensor out, Tensor in) {
    REQUIRE(out.numel() == size() * in.numel());
    std::vector<float> mine(in.ptr<float>(), in.ptr<float>() + in.numel());  // `in` may lie in `out`
    std::fill(out.ptr<float>(), out.ptr<float>() + out.numel(), kMarker);
    std::copy(mine.begin(), mine.end(), out.ptr<float>() + rank() * in.numel());
  }
  void record(const char* kind, Tensor out, Tensor in) {
    ops.push_back({kind, out.ptr<float>(), out.numel(), in.ptr<float>(), in.numel()});
  }
  CommRequestPtr start() {
    in_flight += 1;
    max_in_flight = std::max(max_in_flight, in_flight);
    return std::make_unique<Request>(*this);
  }
};

LayoutOptions data_rank(int rank, int size) {
  LayoutOptions o;
  o.at.dp = rank;
  o.dims.data = size;
  return o;
}

// Members in construction order: the store refers to all of them.
struct Rank {
  Rank(int zero, double bucket_mb, int rank = 1, int size = 2, BucketReduce reduce = BucketReduce::all_reduce)
      : backend(make_cpu_backend()),
        dp(rank, size),
        layout(tiny_gpt_config(), data_rank(rank, size)),
        store(layout, *backend, dp, nullptr, zero_policy(zero).with_bucket_reduce(reduce), bucket_mb) {}

  void add_grads(int unit, float value) {
    Tensor g = store.grads(unit);
    for (int64_t i = 0; i < g.numel(); ++i) g.ptr<float>()[i] += value;
  }
  std::vector<float> params(int unit) {
    Tensor t = store.acquire(unit);
    std::vector<float> out(t.ptr<float>(), t.ptr<float>() + t.numel());
    store.release(unit);
    return out;
  }

  std::unique_ptr<Backend> backend;
  SimulatedDataGroup dp;
  StageLayout layout;
  ParamStore store;
};

// AdamW's first step with lr 0.1 and no decay: a weight moves by lr * g / (|g| + eps) = 0.1
// against its (positive) gradient.
AdamWStep first_step() {
  AdamWStep step;
  step.lr = 0.1f;
  step.weight_decay = 0;
  step.step = 1;
  return step;
}

// Elements of unit u after first_step that are not: this rank's half (the second) 0.1 below
// `before` and its padding past numel still 0 (its gradients there are not, see add_grads), the
// other rank's half the marker its gather leaves.
int wrong_after_first_step(const std::vector<float>& after, const std::vector<float>& before, int64_t padded,
                           int64_t numel) {
  int wrong = 0;
  for (int64_t i = 0; i < padded; ++i) {
    const float want = i < padded / 2 ? kMarker : i >= numel ? 0.0f : before[size_t(i)] - 0.1f;
    wrong += std::fabs(after[size_t(i)] - want) > 1e-6f ? 1 : 0;
  }
  return wrong;
}

constexpr int kUnits = 5;
const int64_t kOffset[kUnits] = {0, 128, 176, 1056, 1936};
const int64_t kPadded[kUnits] = {128, 48, 880, 880, 16};
const int64_t kNumel[kUnits] = {128, 40, 872, 872, 16};

}  // namespace

TEST_CASE("ParamStore zero 0: gradients accumulate locally, then are all-reduced in buckets") {
  // 4000-byte buckets: backward completes ln_f (64 bytes), h.1 (3520), h.0 (3520) -> over the
  // limit, one bucket of units 2..4; then wpe (192) and wte (512), flushed by finish_grads.
  Rank r(0, 4000.0 / (1024 * 1024));
  r.store.zero_grads();
  const float* base = r.store.grads(0).ptr<float>();
  r.store.begin_micro(false);  // micro-batch 1 of 2
  for (int u = kUnits - 1; u >= 0; --u) {
    r.add_grads(u, float(u + 1));
    r.store.grads_done(u);
  }
  CHECK(r.dp.ops.empty());
  r.store.begin_micro(true);
  for (int u = kUnits - 1; u >= 0; --u) {
    r.add_grads(u, float(u + 1));
    r.store.grads_done(u);
  }
  r.store.finish_grads();
  REQUIRE(r.dp.ops.size() == 2);
  CHECK(r.dp.ops[0].kind == "all_reduce");
  CHECK(r.dp.ops[0].out - base == 176);
  CHECK(r.dp.ops[0].out_n == 1776);
  CHECK(r.dp.ops[1].out - base == 0);
  CHECK(r.dp.ops[1].out_n == 176);
  CHECK(r.dp.in_flight == 0);
  for (int u = 0; u < kUnits; ++u) {
    Tensor g = r.store.grads(u);
    CHECK(g.numel() == kPadded[u]);
    CHECK(std::all_of(g.ptr<float>(), g.ptr<float>() + g.numel(), [&](float x) { return x == 4.0f * float(u + 1); }));
  }
  // The norm counts the parameters in this rank's half of every unit: 64, 16, 432, 432 and 8
  // elements of values 4, 8, 12, 16, 20 (not the padding).
  CHECK(r.store.grad_sq_norm() == doctest::Approx(64 * 16 + 16 * 64 + 432 * 144 + 432 * 256 + 8 * 400));
}

TEST_CASE("ParamStore zero 0: one unit per bucket keeps at most two all-reduces in flight") {
  Rank r(0, 1e-9);  // every unit fills a bucket on its own
  r.store.zero_grads();
  const float* base = r.store.grads(0).ptr<float>();
  r.store.begin_micro(true);
  for (int u = kUnits - 1; u >= 0; --u) {
    r.add_grads(u, 1.0f);
    r.store.grads_done(u);
  }
  r.store.finish_grads();
  REQUIRE(r.dp.ops.size() == size_t(kUnits));
  for (int i = 0; i < kUnits; ++i) {
    const int u = kUnits - 1 - i;
    CAPTURE(u);
    CHECK(r.dp.ops[size_t(i)].out - base == kOffset[u]);
    CHECK(r.dp.ops[size_t(i)].out_n == kPadded[u]);
  }
  CHECK(r.dp.max_in_flight == 2);
  CHECK(r.dp.in_flight == 0);
}

TEST_CASE("ParamStore zero 0: a transport that holds no copies keeps every bucket in flight") {
  // 3000-byte buckets: units 4..3 (64 + 3520 bytes) and 2 (3520) fill one each; 1 and 0 (192 +
  // 512) stay staged after the backward, until flush_grads.
  Rank r(0, 3000.0 / (1024 * 1024));
  r.dp.cost = InFlightCost::none;
  r.store.zero_grads();
  r.store.begin_micro(true);
  for (int u = kUnits - 1; u >= 0; --u) {
    r.add_grads(u, 1.0f);
    r.store.grads_done(u);
  }
  CHECK(r.dp.ops.size() == 2);
  r.store.flush_grads();
  REQUIRE(r.dp.ops.size() == 3);
  CHECK(r.dp.ops[2].out_n == kPadded[0] + kPadded[1]);
  CHECK(r.dp.in_flight == 3);  // over MPI the third would have waited for the first
  r.store.finish_grads();
  CHECK(r.dp.ops.size() == 3);  // nothing is flushed twice
  CHECK(r.dp.max_in_flight == 3);
  CHECK(r.dp.in_flight == 0);
  for (int u = 0; u < kUnits; ++u) {
    Tensor g = r.store.grads(u);
    CHECK(std::all_of(g.ptr<float>(), g.ptr<float>() + g.numel(), [](float x) { return x == 2.0f; }));
  }
}

TEST_CASE("ParamStore zero 2: every micro-batch reduce-scatters each unit into this rank's shard") {
  Rank r(2, 25.0);
  r.store.zero_grads();
  for (int micro = 0; micro < 2; ++micro) {
    r.store.begin_micro(micro == 1);
    for (int u = kUnits - 1; u >= 0; --u) {
      r.add_grads(u, micro == 0 ? 1.0f : 0.5f);  // a fresh staging buffer per micro-batch
      r.store.grads_done(u);
    }
    CHECK(r.dp.ops.size() == size_t(kUnits * (micro + 1)));  // not deferred to the last one
  }
  r.store.finish_grads();
  for (int i = 0; i < 2 * kUnits; ++i) {
    const int u = kUnits - 1 - i % kUnits;
    CAPTURE(i);
    CHECK(r.dp.ops[size_t(i)].kind == "reduce_scatter");
    CHECK(r.dp.ops[size_t(i)].in_n == kPadded[u]);
    CHECK(r.dp.ops[size_t(i)].out_n == kPadded[u] / 2);
  }
  CHECK(r.dp.max_in_flight == 3);
  CHECK(r.dp.in_flight == 0);
  // The shard holds 2 x 1 + 2 x 0.5 = 3 everywhere: 952 parameter elements of 9.
  CHECK(r.store.grad_sq_norm() == doctest::Approx(952 * 9));
}

TEST_CASE("ParamStore: buffers per ZeRO stage (f32 compute, data 2)") {
  struct Row {
    int zero;
    int64_t params, master, grads, optimizer;
  };
  // Whole: 1952 x 4 = 7808 bytes; shard: 976 x 4 = 3904. Under ZeRO 3 before the first step the
  // gathered units are estimated as two of the largest (2 x 880 x 4).
  const Row rows[] = {{0, 7808, 0, 7808, 2 * 7808},
                      {1, 7808, 0, 7808, 2 * 3904},
                      {2, 7808, 0, 3904, 2 * 3904},
                      {3, 2 * 880 * 4, 3904, 3904, 2 * 3904}};
  for (const Row& row : rows) {
    CAPTURE(row.zero);
    Rank r(row.zero, 25.0);
    const MemoryFigures m = r.store.memory();
    CHECK(m.params == row.params);
    CHECK(m.master == row.master);
    CHECK(m.grads == row.grads);
    CHECK(m.optimizer == row.optimizer);
    CHECK(m.comm == 0);
    CHECK(r.store.zero().stage() == row.zero);
    // What a checkpoint restores on this rank: the master whole while it is the compute copy,
    // the optimizer state from its first stage on only the owned slice.
    const LocalParam& wte = r.layout.find(0, "wte.weight");
    const Range master = r.store.needed_range(wte, OptimizerState::master);
    const Range adam_m = r.store.needed_range(wte, OptimizerState::m);
    CHECK(master.begin == (row.zero == 3 ? 64 : 0));
    CHECK(master.end == 128);
    CHECK(adam_m.begin == (row.zero == 0 ? 0 : 64));
    CHECK(adam_m.end == 128);
  }
}

TEST_CASE("ParamStore zero 1: AdamW updates the owned half, then each unit is all-gathered") {
  Rank r(1, 25.0);
  r.store.init_random(5);
  std::vector<std::vector<float>> before;
  for (int u = 0; u < kUnits; ++u) before.push_back(r.params(u));
  r.store.zero_grads();
  r.store.begin_micro(true);
  for (int u = kUnits - 1; u >= 0; --u) {
    r.add_grads(u, 1.0f);
    r.store.grads_done(u);
  }
  r.store.finish_grads();  // gradients 2 everywhere
  r.dp.ops.clear();
  r.store.optimizer_step(first_step());
  const float* base = r.store.acquire(0).ptr<float>();
  r.store.release(0);
  REQUIRE(r.dp.ops.size() == size_t(kUnits));
  for (int u = 0; u < kUnits; ++u) {
    CAPTURE(u);
    const SimulatedDataGroup::Op& op = r.dp.ops[size_t(u)];
    CHECK(op.kind == "all_gather");
    CHECK(op.out - base == kOffset[u]);
    CHECK(op.out_n == kPadded[u]);
    CHECK(op.in - op.out == kPadded[u] / 2);  // in place: this rank's half
    CHECK(op.in_n == kPadded[u] / 2);
    CHECK(wrong_after_first_step(r.params(u), before[size_t(u)], kPadded[u], kNumel[u]) == 0);
  }
}

TEST_CASE("ParamStore zero 1 reduce-scatter (GPUs): each unit of a bucket is reduce-scattered in place, once a step") {
  // The buckets of the zero-0 test above (4000 bytes: units 2..4, then 0..1), but one in-place
  // reduce-scatter per unit: in = the whole unit, out = this rank's half of it.
  Rank r(1, 4000.0 / (1024 * 1024), 1, 2, BucketReduce::reduce_scatter);
  r.store.init_random(5);
  std::vector<std::vector<float>> before;
  for (int u = 0; u < kUnits; ++u) before.push_back(r.params(u));
  r.store.zero_grads();
  const float* base = r.store.grads(0).ptr<float>();
  for (int micro = 0; micro < 2; ++micro) {
    r.store.begin_micro(micro == 1);
    for (int u = kUnits - 1; u >= 0; --u) {
      r.add_grads(u, float(u + 1));
      r.store.grads_done(u);
    }
    if (micro == 0) CHECK(r.dp.ops.empty());  // accumulated locally until the last micro-batch
  }
  r.store.finish_grads();
  const int order[kUnits] = {2, 3, 4, 0, 1};  // bucket 2..4 when h.0 fills it, then 0..1
  REQUIRE(r.dp.ops.size() == size_t(kUnits));
  for (int i = 0; i < kUnits; ++i) {
    const int u = order[i];
    CAPTURE(u);
    const SimulatedDataGroup::Op& op = r.dp.ops[size_t(i)];
    CHECK(op.kind == "reduce_scatter");
    CHECK(op.in - base == kOffset[u]);
    CHECK(op.in_n == kPadded[u]);
    CHECK(op.out - op.in == kPadded[u] / 2);  // in place: this rank's half of the unit
    CHECK(op.out_n == kPadded[u] / 2);
    // The shard holds the group's sum, 2 ranks x 2 micro-batches x (u + 1); the other half is
    // this rank's own accumulation, untouched.
    Tensor g = r.store.grads(u);
    int wrong = 0;
    for (int64_t e = 0; e < kPadded[u]; ++e)
      wrong += g.ptr<float>()[e] != (e >= kPadded[u] / 2 ? 4.0f : 2.0f) * float(u + 1) ? 1 : 0;
    CHECK(wrong == 0);
  }
  CHECK(r.dp.in_flight == 0);
  // The norm counts the shard only, as under all-reduce.
  CHECK(r.store.grad_sq_norm() == doctest::Approx(64 * 16 + 16 * 64 + 432 * 144 + 432 * 256 + 8 * 400));
  r.dp.ops.clear();
  r.store.optimizer_step(first_step());
  for (int u = 0; u < kUnits; ++u) {
    CAPTURE(u);
    CHECK(wrong_after_first_step(r.params(u), before[size_t(u)], kPadded[u], kNumel[u]) == 0);
  }
}

TEST_CASE("ParamStore: init_random puts init_value of every element into every copy, for every ZeRO stage") {
  for (int zero = 0; zero <= 3; ++zero) {
    CAPTURE(zero);
    Rank r(zero, 25.0);
    r.store.init_random(77);
    int checked = 0, wrong = 0;
    for (const LocalParam& p : r.layout.params()) {
      const ParamSpec& spec = r.layout.spec(p);
      const LocalUnit& u = r.layout.units()[size_t(p.unit)];
      const std::vector<float> unit = r.params(p.unit);  // ZeRO 3: the other rank's half is kMarker
      for (int64_t i = 0; i < p.numel; ++i) {
        const int64_t at = p.offset - u.offset + i;
        if (zero == 3 && (at < u.shard.begin || at >= u.shard.end)) continue;
        const float want = init_value(r.layout.config(), spec, 77, i);
        wrong += std::memcmp(&unit[size_t(at)], &want, 4) != 0 ? 1 : 0;
        ++checked;
      }
    }
    CHECK(checked >= (zero == 3 ? 952 : 1928));
    CHECK(wrong == 0);
  }
}

TEST_CASE("ParamStore zero 3: acquire gathers a unit from the shards, release frees it") {
  Rank r(3, 25.0);
  r.store.init_random(5);
  Rank whole(0, 25.0, 0, 1);  // the same model on one rank: the reference values
  whole.store.init_random(5);
  for (int u = 0; u < kUnits; ++u) {
    CAPTURE(u);
    r.dp.ops.clear();
    Tensor t = r.store.acquire(u);
    REQUIRE(r.dp.ops.size() == 1);
    CHECK(r.dp.ops[0].kind == "all_gather");
    CHECK(r.dp.ops[0].out_n == kPadded[u]);
    CHECK(r.dp.ops[0].in_n == kPadded[u] / 2);
    const std::vector<float> ref = whole.params(u);  // padded for one rank: kNumel[u]
    int wrong = 0;
    for (int64_t i = 0; i < kPadded[u]; ++i) {
      const float want = i < kPadded[u] / 2 ? kMarker : i >= kNumel[u] ? 0.0f : ref[size_t(i)];
      wrong += t.ptr<float>()[i] != want ? 1 : 0;
    }
    CHECK(wrong == 0);
    r.store.acquire(u);  // already held: counted, not gathered again
    CHECK(r.dp.ops.size() == 1);
    r.store.release(u);
    r.store.release(u);
    r.store.acquire(u);  // freed on the last release: gathered again
    CHECK(r.dp.ops.size() == 2);
    r.store.release(u);
  }
  CHECK_THROWS_AS(r.store.release(0), std::logic_error);
}

TEST_CASE("ParamStore data 1: units padded to 8 elements (tensor 2) keep their padding 0 and out of the norm") {
  // At tensor 2 each block unit holds 460 parameters, padded to 464 even on one data rank, so
  // the padding is there for every ZeRO stage (each one shard of the whole unit).
  LayoutOptions tensor2;
  tensor2.dims.tensor = 2;
  const StageLayout layout(tiny_gpt_config(), tensor2);
  int padded_units = 0;
  for (const LocalUnit& u : layout.units()) padded_units += u.padded > u.numel ? 1 : 0;
  REQUIRE(padded_units == 2);
  for (int zero = 0; zero <= 3; ++zero) {
    CAPTURE(zero);
    std::unique_ptr<Backend> backend = make_cpu_backend();
    SimulatedDataGroup dp(0, 1);
    ParamStore store(layout, *backend, dp, nullptr, zero_policy(zero), 25.0);
    store.init_random(9);
    std::vector<std::vector<float>> before;
    for (size_t u = 0; u < layout.units().size(); ++u) {
      Tensor t = store.acquire(int(u));
      before.emplace_back(t.ptr<float>(), t.ptr<float>() + t.numel());
      store.release(int(u));
    }
    store.zero_grads();
    store.begin_micro(true);
    for (int u = int(layout.units().size()) - 1; u >= 0; --u) {
      Tensor g = store.grads(u);
      const LocalUnit& unit = layout.units()[size_t(u)];
      for (int64_t i = 0; i < g.numel(); ++i) g.ptr<float>()[i] = i < unit.numel ? 1.0f : 1000.0f;
      store.grads_done(u);
    }
    store.finish_grads();
    // Every parameter element is counted once on the only rank of the world (the replicated
    // ones too: tensor rank 0); the padding's 1000s are not.
    int64_t counted = 0;
    for (const LocalUnit& u : layout.units()) counted += u.numel;
    CHECK(store.grad_sq_norm() == doctest::Approx(double(counted)));
    store.optimizer_step(first_step());
    for (size_t u = 0; u < layout.units().size(); ++u) {
      CAPTURE(u);
      const LocalUnit& unit = layout.units()[u];
      Tensor t = store.acquire(int(u));
      int wrong = 0;
      for (int64_t i = 0; i < unit.padded; ++i) {
        const float want = i < unit.numel ? before[u][size_t(i)] - 0.1f : 0.0f;
        wrong += std::fabs(t.ptr<float>()[i] - want) > 1e-6f ? 1 : 0;
      }
      store.release(int(u));
      CHECK(wrong == 0);
    }
  }
}
