// Blends: source draws in proportion to the weights over any window (counts against the
// binomial spread), the same global batch for every data-parallel layout, each source's own
// epochs (every sample once per epoch, then a rollover), exact resume also into another layout
// and across rollovers, stages switching the mix at step boundaries, and the errors of a
// state that does not fit.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "data/blend_mix.h"
#include "data/loader.h"
#include "data/token_shard.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

constexpr int kT = 4;

// Source `tag`'s shards: the token at position p of the source is tag * 10000 + p, so a
// sample names its source (first token / 10000) and its place (first token % 10000).
std::string make_source(const std::string& dir_name, int tag, const std::vector<int>& sizes) {
  const std::string dir = scratch_dir(dir_name);
  int32_t next = tag * 10000;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int32_t> t(static_cast<size_t>(sizes[i]));
    for (int32_t& v : t) v = next++;
    write_shard(dir + "/part_" + std::to_string(i) + ".bin", t, TokenWidth::u16);
  }
  return dir + "/part_*.bin";
}

struct Blend {
  std::string a, b, c;  // 3 sources: a large, b small (rolls over often), c medium
};

Blend make_blend(const std::string& name) {
  return {make_source(name + "/web", 1, {4 * 60 + 1, 4 * 41 + 3}), make_source(name + "/code", 2, {4 * 7 + 1}),
          make_source(name + "/books", 3, {4 * 30 + 1, 4 * 20 + 1})};
}

LoaderOptions blend_options(const Blend& b, int B, int accum, int dp_rank, int dp_size, uint64_t seed = 7) {
  LoaderOptions o;
  o.sources = {BlendSource{b.a, 5, "web"}, BlendSource{b.b, 3, ""}, BlendSource{b.c, 2, ""}};
  o.seq_len = kT;
  o.micro_batch = B;
  o.grad_accum = accum;
  o.dp_rank = dp_rank;
  o.dp_size = dp_size;
  o.seed = seed;
  o.vocab_size = 65536;
  return o;
}

// One optimizer step of every rank of a layout: the first tokens of its samples in
// global-batch order (rank-major, then micro-batch), each checked to be a whole sample.
std::vector<int32_t> global_step(std::vector<DataLoader>& ranks, int B, int accum, int64_t step) {
  std::vector<int32_t> ids;
  for (DataLoader& l : ranks) {
    l.set_step(step);
    for (int m = 0; m < accum; ++m) {
      const std::vector<int32_t> starts = next_sample_starts(l, B, kT);
      ids.insert(ids.end(), starts.begin(), starts.end());
    }
  }
  return ids;
}

std::vector<DataLoader> layout(const LoaderOptions& base, int dp) {
  std::vector<DataLoader> ranks;
  for (int r = 0; r < dp; ++r) {
    LoaderOptions o = base;
    o.dp_rank = r;
    o.dp_size = dp;
    ranks.emplace_back(o);
  }
  return ranks;
}

// |count - n p| within 4.5 standard deviations of the binomial (false alarm ~ 7e-6 per check).
void check_binomial(int64_t count, int64_t n, double p) {
  const double sd = std::sqrt(double(n) * p * (1 - p));
  INFO("count " << count << " of " << n << ", p " << p << ", expected " << double(n) * p << " +- " << 4.5 * sd);
  CHECK(std::fabs(double(count) - double(n) * p) <= 4.5 * sd);
}

}  // namespace

TEST_CASE("blend draws are proportional to the weights over any window and fixed by the seed") {
  const std::vector<double> weights = {5, 3, 2, 0};
  const std::vector<double> c = blend_cumulative(weights);
  REQUIRE(c.back() == 1.0);
  const int64_t n = 60000;
  std::vector<int> picks;
  for (int64_t s = 0; s < n; ++s) picks.push_back(blend_pick(42, s, c));
  for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, n}, {0, 1000}, {12345, 16345}, {50000, 60000}}) {
    std::vector<int64_t> count(weights.size(), 0);
    for (int64_t s = begin; s < end; ++s) ++count[static_cast<size_t>(picks[static_cast<size_t>(s)])];
    for (size_t k = 0; k < 3; ++k) check_binomial(count[k], end - begin, weights[k] / 10.0);
    CHECK(count[3] == 0);  // a zero weight is never drawn
  }
  int same = 0;
  for (int64_t s = 0; s < 1000; ++s) {
    CHECK(blend_pick(42, s, c) == picks[static_cast<size_t>(s)]);
    same += blend_pick(43, s, c) == picks[static_cast<size_t>(s)];
  }
  CHECK(same < 600);  // another seed draws another sequence (chance agreement is 0.38)
}

TEST_CASE("a blend gives every data-parallel layout the same global batches, per-source epochs and rollovers") {
  const Blend b = make_blend("blend_layouts");
  const int steps = 30;
  // Layouts of one global batch of 12: (micro_batch, grad_accum, data ranks).
  const std::vector<std::array<int, 3>> layouts = {{12, 1, 1}, {3, 2, 2}, {1, 3, 4}};
  std::vector<std::vector<int32_t>> runs;
  for (const auto& [B, accum, dp] : layouts) {
    std::vector<DataLoader> ranks = layout(blend_options(b, B, accum, 0, 1), dp);
    std::vector<int32_t> all;
    for (int s = 1; s <= steps; ++s) {
      const std::vector<int32_t> ids = global_step(ranks, B, accum, s);
      all.insert(all.end(), ids.begin(), ids.end());
    }
    runs.push_back(all);
  }
  CHECK(runs[1] == runs[0]);
  CHECK(runs[2] == runs[0]);

  // Per source: its draws walk its own epochs, each a permutation of all its samples.
  const std::map<int, int64_t> samples = {{1, 60 + 41}, {2, 7}, {3, 30 + 20}};
  std::map<int, std::vector<int32_t>> by_source;
  for (int32_t id : runs[0]) by_source[id / 10000].push_back(id % 10000);
  for (const auto& entry : by_source) {
    const std::vector<int32_t>& ids = entry.second;
    const int64_t n = samples.at(entry.first);
    INFO("source " << entry.first);
    for (size_t start = 0; start + static_cast<size_t>(n) <= ids.size(); start += static_cast<size_t>(n)) {
      std::set<int32_t> epoch(ids.begin() + static_cast<std::ptrdiff_t>(start),
                              ids.begin() + static_cast<std::ptrdiff_t>(start) + n);
      CHECK(epoch.size() == static_cast<size_t>(n));
    }
  }
  REQUIRE(by_source[2].size() > 3 * 7);  // the small source rolled over several times
  check_binomial(int64_t(by_source[1].size()), int64_t(runs[0].size()), 0.5);
  check_binomial(int64_t(by_source[2].size()), int64_t(runs[0].size()), 0.3);
  check_binomial(int64_t(by_source[3].size()), int64_t(runs[0].size()), 0.2);
}

TEST_CASE("a blend's state resumes exactly, also into another layout and across rollovers") {
  const Blend b = make_blend("blend_resume");
  std::vector<DataLoader> one = layout(blend_options(b, 6, 2, 0, 1), 1);
  std::vector<int32_t> expected;
  LoaderState saved;
  for (int s = 1; s <= 25; ++s) {
    if (s == 11) saved = one[0].state();
    const std::vector<int32_t> ids = global_step(one, 6, 2, s);
    if (s >= 11) expected.insert(expected.end(), ids.begin(), ids.end());
  }
  REQUIRE(saved.sources.size() == 3);
  CHECK(saved.sources[1].epoch >= 1);  // the small source has rolled over before the save
  CHECK(saved.position == 10 * 12);
  std::vector<DataLoader> four = layout(blend_options(b, 1, 3, 0, 1), 4);
  for (DataLoader& l : four) l.restore(saved);
  std::vector<int32_t> resumed;
  for (int s = 11; s <= 25; ++s) {
    const std::vector<int32_t> ids = global_step(four, 1, 3, s);
    resumed.insert(resumed.end(), ids.begin(), ids.end());
  }
  CHECK(resumed == expected);
  // reset() returns every source to its start.
  one[0].reset();
  std::vector<DataLoader> fresh = layout(blend_options(b, 6, 2, 0, 1), 1);
  CHECK(global_step(one, 6, 2, 1) == global_step(fresh, 6, 2, 1));
}

TEST_CASE("stages switch the mix at step boundaries and steps after the last use the base mix") {
  const Blend b = make_blend("blend_stages");
  LoaderOptions o = blend_options(b, 8, 1, 0, 1);
  o.stages = {BlendStage{3, {BlendSource{b.b, 1, ""}}}, BlendStage{5, {}}, BlendStage{7, {BlendSource{b.c, 1, ""}, BlendSource{b.a, 1, ""}}}};
  std::vector<DataLoader> ranks = layout(o, 1);
  CHECK(ranks[0].stage_at(1) == 0);
  CHECK(ranks[0].stage_at(3) == 0);
  CHECK(ranks[0].stage_at(4) == 1);
  CHECK(ranks[0].stage_at(7) == 2);
  CHECK(ranks[0].stage_at(8) == 3);
  CHECK(ranks[0].mix_text(0) == "code 1");
  CHECK(ranks[0].mix_text(2) == "web 0.5, books 0.5");
  CHECK(ranks[0].mix_text(3) == "web 0.5, code 0.3, books 0.2");
  std::map<int, std::set<int>> sources_by_step;
  for (int s = 1; s <= 12; ++s)
    for (int32_t id : global_step(ranks, 8, 1, s)) sources_by_step[s].insert(id / 10000);
  for (int s = 1; s <= 3; ++s) CHECK(sources_by_step[s] == std::set<int>{2});
  for (int s = 6; s <= 7; ++s) CHECK(sources_by_step[s].count(2) == 0);
  std::set<int> later;
  for (int s = 4; s <= 12; ++s)
    if (s < 6 || s > 7) later.insert(sources_by_step[s].begin(), sources_by_step[s].end());
  CHECK(later == std::set<int>{1, 2, 3});
}

TEST_CASE("a state that does not fit the blend is an InputError naming what differs") {
  const Blend b = make_blend("blend_bad_state");
  DataLoader l(blend_options(b, 4, 1, 0, 1));
  LoaderState single;  // a single source's state
  CHECK_THROWS_WITH_AS(l.restore(single), doctest::Contains("blend of 3 sources"), InputError);
  // Both sides named: what the checkpoint's state was saved for, and the recipe's data.
  const std::string three = "the blend of '" + b.a + "', '" + b.b + "' and '" + b.c + "'";
  CHECK_THROWS_WITH_AS(l.restore(single),
                       doctest::Contains(("saved for a single source (its path is not recorded), does not fit the data " +
                                          three + ": the data is a blend of 3 sources").c_str()),
                       InputError);
  LoaderState s = l.state();
  s.sources[2].path = "elsewhere/*.bin";
  CHECK_THROWS_WITH_AS(l.restore(s), doctest::Contains("'elsewhere/*.bin' in the state"), InputError);
  s = l.state();
  s.sources[1].position = 8;  // the small source has 7 samples
  CHECK_THROWS_WITH_AS(l.restore(s), doctest::Contains("has 7 samples"), InputError);
  // A blend's state into a single source.
  LoaderOptions o = blend_options(b, 4, 1, 0, 1);
  o.sources.resize(1);
  o.sources[0].name.clear();
  o.sources[0].weight = 1;
  DataLoader plain(o);
  CHECK_THROWS_WITH_AS(plain.restore(l.state()), doctest::Contains("a blend's state"), InputError);
  const std::string saved = "saved for " + three + ", does not fit the data '" + b.a + "'";
  CHECK_THROWS_WITH_AS(plain.restore(l.state()), doctest::Contains(saved.c_str()), InputError);
}

TEST_CASE("blend source names: given, else the folder when unique, else sourceN") {
  const std::vector<BlendSource> list = {{"data/web/train_*.bin", 1, ""}, {"x/code/a.bin,y/b.bin", 1, ""},
                                         {"data/web2/t.bin", 1, "mine"}, {"t.bin", 1, ""},
                                         {"a/same/x.bin", 1, ""}, {"b/same/x.bin", 1, ""}, {"d e/f.bin", 1, ""}};
  CHECK(blend_source_names(list) ==
        std::vector<std::string>{"web", "code", "mine", "source3", "source4", "source5", "d_e"});
}
