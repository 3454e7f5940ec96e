// DataLoader: determinism from the seed, one global order shared by every data-parallel
// layout (the ranks of a step split the dp=1 step's samples), epochs covering every sample
// once, exact resume (also into another dp size), and its InputErrors.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <set>

#include "data/loader.h"
#include "data/token_shard.h"
#include "data/shuffle.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

constexpr int kT = 8;

// Shards whose token at global position p is p (so a sample is identified by its first
// token): sizes chosen unequal, with tails that give no whole sample.
std::string make_dataset(const std::string& name, const std::vector<int>& sizes) {
  const std::string dir = scratch_dir(name);
  int32_t next = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int32_t> t(static_cast<size_t>(sizes[i]));
    for (int32_t& v : t) v = next++;
    write_shard(dir + "/part_" + std::to_string(i) + ".bin", t, TokenWidth::u16);
  }
  return dir + "/part_*.bin";
}

LoaderOptions options(const std::string& pattern, int B, int accum, int dp_rank, int dp_size,
                      uint64_t seed = 1) {
  LoaderOptions o;
  o.sources = single_source(pattern);
  o.seq_len = kT;
  o.micro_batch = B;
  o.grad_accum = accum;
  o.dp_rank = dp_rank;
  o.dp_size = dp_size;
  o.seed = seed;
  o.vocab_size = 65536;
  return o;
}

// One micro-batch as the first tokens of its samples; checks inputs/targets are a sample.
std::vector<int32_t> next_ids(DataLoader& l, int B) { return next_sample_starts(l, B, kT); }

// The samples of one step, in the order of the global batch: rank-major, micro-batch-minor.
std::vector<int32_t> step_ids(std::vector<DataLoader>& ranks, int B, int accum) {
  std::vector<int32_t> all;
  for (auto& l : ranks)
    for (int m = 0; m < accum; ++m) {
      const auto ids = next_ids(l, B);
      all.insert(all.end(), ids.begin(), ids.end());
    }
  return all;
}

std::vector<DataLoader> make_ranks(const std::string& pattern, int B, int accum, int dp,
                                   uint64_t seed = 1) {
  std::vector<DataLoader> ranks;
  for (int r = 0; r < dp; ++r) ranks.emplace_back(options(pattern, B, accum, r, dp, seed));
  return ranks;
}

}  // namespace

TEST_CASE("shuffle: SplitMix64 matches the published sequence, draws stay in range") {
  SplitMix64 g(1234567);
  CHECK(g.next() == 6457827717110365317ull);
  CHECK(g.next() == 3203168211198807973ull);
  CHECK(g.next() == 9817491932198370423ull);
  CHECK(g.next() == 4593380528125082431ull);
  CHECK(g.next() == 16408922859458223821ull);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 6000; ++i) ++counts[g.below(6)];
  for (int c : counts) CHECK((c > 850 && c < 1150));
  std::vector<int> v(50);
  for (int i = 0; i < 50; ++i) v[i] = i;
  fisher_yates(&v, &g);
  CHECK(std::set<int>(v.begin(), v.end()).size() == 50);
  bool identity = true;
  for (int i = 0; i < 50; ++i) identity = identity && v[i] == i;
  CHECK(!identity);
}

TEST_CASE("loader: same seed gives the same batches, another seed another order") {
  const std::string p = make_dataset("loader_seed", {300, 517, 129, 260});
  DataLoader a(options(p, 3, 1, 0, 1, 42)), b(options(p, 3, 1, 0, 1, 42)),
      c(options(p, 3, 1, 0, 1, 43));
  std::vector<int32_t> sa, sb, sc;
  for (int i = 0; i < 20; ++i) {
    auto x = next_ids(a, 3), y = next_ids(b, 3), z = next_ids(c, 3);
    sa.insert(sa.end(), x.begin(), x.end());
    sb.insert(sb.end(), y.begin(), y.end());
    sc.insert(sc.end(), z.begin(), z.end());
  }
  CHECK(sa == sb);
  CHECK(sa != sc);
}

TEST_CASE("loader: every data-parallel layout splits the dp=1 global batch, disjointly") {
  const std::string p = make_dataset("loader_dp", {300, 517, 129, 260, 90});
  // Global batch 8 samples: (B, accum, dp) = (2, 4, 1), (4, 2, 1), (2, 2, 2), (1, 4, 2),
  // (2, 1, 4), (1, 2, 4).
  auto reference = make_ranks(p, 2, 4, 1);
  std::vector<std::vector<DataLoader>> layouts;
  const std::vector<std::array<int, 3>> shapes = {{4, 2, 1}, {2, 2, 2}, {1, 4, 2}, {2, 1, 4}, {1, 2, 4}};
  for (const auto& s : shapes) layouts.push_back(make_ranks(p, s[0], s[1], s[2]));
  for (int step = 0; step < 30; ++step) {  // 30 x 8 > one epoch of 160 samples: rolls over
    const auto want = step_ids(reference, 2, 4);
    CHECK(std::set<int32_t>(want.begin(), want.end()).size() == want.size());
    for (size_t k = 0; k < shapes.size(); ++k) {
      INFO("step " << step << ", B " << shapes[k][0] << " accum " << shapes[k][1] << " dp "
                   << shapes[k][2]);
      CHECK(step_ids(layouts[k], shapes[k][0], shapes[k][1]) == want);
    }
  }
}

TEST_CASE("loader: an epoch visits every sample once, the next epoch in a new order") {
  const std::string p = make_dataset("loader_epoch", {17 * kT + 1, 9 * kT + 5, 6 * kT + 1});
  DataLoader l(options(p, 4, 1, 0, 1, 9));
  REQUIRE(l.samples_per_epoch() == 32);
  CHECK(l.total_tokens() == 17 * kT + 1 + 9 * kT + 5 + 6 * kT + 1);
  std::vector<int32_t> e0, e1;
  for (int s = 0; s < 8; ++s) {
    const auto ids = next_ids(l, 4);
    e0.insert(e0.end(), ids.begin(), ids.end());
  }
  CHECK(l.state().epoch == 0);
  CHECK(l.state().position == 32);
  for (int s = 0; s < 8; ++s) {
    const auto ids = next_ids(l, 4);
    e1.insert(e1.end(), ids.begin(), ids.end());
  }
  CHECK(l.state().epoch == 1);
  CHECK(std::set<int32_t>(e0.begin(), e0.end()).size() == 32);
  CHECK(std::set<int32_t>(e0.begin(), e0.end()) == std::set<int32_t>(e1.begin(), e1.end()));
  CHECK(e0 != e1);
}

TEST_CASE("loader: an epoch ends when fewer than a global batch of samples remain") {
  const std::string p = make_dataset("loader_remainder", {10 * kT + 1});  // 10 samples
  DataLoader l(options(p, 3, 1, 0, 1));
  for (int s = 0; s < 3; ++s) next_ids(l, 3);
  CHECK(l.state().epoch == 0);
  CHECK(l.state().position == 9);
  next_ids(l, 3);  // 1 sample left: a new epoch starts
  CHECK(l.state().epoch == 1);
  CHECK(l.state().position == 3);
}

TEST_CASE("loader: Shuffle::off reads the shards in file order, samples in order") {
  const std::string p = make_dataset("loader_noshuffle", {5 * kT + 1, 4 * kT + 1});
  auto o = options(p, 3, 1, 0, 1);
  o.shuffle = Shuffle::off;
  DataLoader l(o);
  CHECK(next_ids(l, 3) == std::vector<int32_t>{0, 8, 16});
  CHECK(next_ids(l, 3) == std::vector<int32_t>{24, 32, 41});
  CHECK(next_ids(l, 3) == std::vector<int32_t>{49, 57, 65});
}

TEST_CASE("loader: state and restore resume exactly, also into another dp size") {
  const std::string p = make_dataset("loader_resume", {300, 517, 129, 260});
  auto run = make_ranks(p, 2, 2, 2, 5);
  for (int s = 0; s < 23; ++s) step_ids(run, 2, 2);  // 23 steps of 8 cross the 149-sample epoch
  const LoaderState st = run[0].state();
  CHECK(st.epoch == run[1].state().epoch);
  CHECK(st.position == run[1].state().position);
  std::vector<int32_t> cont;
  for (int s = 0; s < 10; ++s) {
    auto ids = step_ids(run, 2, 2);
    cont.insert(cont.end(), ids.begin(), ids.end());
  }
  for (const auto& shape : std::vector<std::array<int, 3>>{{2, 2, 2}, {8, 1, 1}, {1, 2, 4}}) {
    auto resumed = make_ranks(p, shape[0], shape[1], shape[2], 5);
    for (auto& l : resumed) l.restore(st);
    std::vector<int32_t> got;
    for (int s = 0; s < 10; ++s) {
      auto ids = step_ids(resumed, shape[0], shape[1]);
      got.insert(got.end(), ids.begin(), ids.end());
    }
    INFO("resumed as B " << shape[0] << " accum " << shape[1] << " dp " << shape[2]);
    CHECK(got == cont);
  }
  run[0].reset();
  DataLoader fresh(options(p, 2, 2, 0, 2, 5));
  CHECK(next_ids(run[0], 2) == next_ids(fresh, 2));
}

TEST_CASE("loader: a state from other data is an InputError, state inside a step is a bug") {
  const std::string p = make_dataset("loader_badstate", {10 * kT + 1});
  DataLoader l(options(p, 2, 2, 0, 1));
  CHECK_THROWS_WITH_AS(l.restore({0, 11, {}}), doctest::Contains("position 11"), InputError);
  CHECK_THROWS_AS(l.restore({-1, 0, {}}), InputError);
  next_ids(l, 2);
  CHECK_THROWS_AS(l.state(), std::logic_error);
}

TEST_CASE("loader: shards too small for a sample or for a global batch are InputErrors") {
  const std::string p = make_dataset("loader_small", {3 * kT + 1, kT});
  CHECK_THROWS_WITH_AS(DataLoader(options(p, 1, 1, 0, 1)),
                       doctest::Contains("part_1.bin' holds 8 tokens, fewer than one sample"),
                       InputError);
  const std::string q = make_dataset("loader_batch", {3 * kT + 1, 2 * kT + 1});
  CHECK(DataLoader(options(q, 5, 1, 0, 1)).samples_per_epoch() == 5);
  CHECK_THROWS_WITH_AS(DataLoader(options(q, 3, 1, 0, 2)),
                       doctest::Contains("fewer than one global batch of 6"), InputError);
  CHECK_THROWS_WITH_AS(DataLoader(options(q, 3, 1, 0, 2)), doctest::Contains(q.c_str()), InputError);
  CHECK_THROWS_AS(DataLoader(options(q, 1, 1, 2, 2)), ConfigError);  // dp_rank out of range
}
