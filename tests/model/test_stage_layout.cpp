// StageLayout on tiny_gpt_config (2 layers, d_model C = 8, vocabulary padded to 16, 5 positions):
// units, offsets, padding to a multiple of 8 x the data degree, ZeRO shard ranges, stage and tensor
// slices, and which copies count in the gradient norm, against sizes worked out by hand:
//   wte 16 x 8 = 128, wpe 5 x 8 = 40, ln_f 2C = 16, a block 12 C^2 + 13 C = 872 elements, and
//   under tensor 2 a block 12 C^2 / 2 + 7 C / 2 + 6 C = 460 (LayerNorms and row-parallel biases
//   replicated), wte 64.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "model/stage_layout.h"
#include "tests/support/test_util.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;
using trainer::testing::gpt_config;
using trainer::testing::tiny_gpt_config;

namespace {

LayoutOptions options(int tp_rank, int tp, int pp_rank, int pp, int dp_rank, int dp) {
  LayoutOptions o;
  o.dims = ParallelDims{dp, tp, pp};
  o.at = GridCoords{dp_rank, tp_rank, pp_rank};
  return o;
}

struct UnitRow {
  std::string name;
  int64_t offset, numel, padded, shard_begin, shard_end, shard_offset;
};

void check_units(const StageLayout& l, const std::vector<UnitRow>& want) {
  REQUIRE(l.units().size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const LocalUnit& u = l.units()[i];
    CAPTURE(want[i].name);
    CHECK(u.name == want[i].name);
    CHECK(u.offset == want[i].offset);
    CHECK(u.numel == want[i].numel);
    CHECK(u.padded == want[i].padded);
    CHECK(u.shard.begin == want[i].shard_begin);
    CHECK(u.shard.end == want[i].shard_end);
    CHECK(u.shard_offset == want[i].shard_offset);
  }
}

Range range(int64_t b, int64_t e) { return Range{b, e}; }
bool same(Range a, Range b) { return a.begin == b.begin && a.end == b.end; }

}  // namespace

TEST_CASE("StageLayout: one rank holds every unit whole, in forward order") {
  const StageLayout l(tiny_gpt_config(), options(0, 1, 0, 1, 0, 1));
  check_units(l, {{"wte", 0, 128, 128, 0, 128, 0},
                  {"wpe", 128, 40, 40, 0, 40, 128},
                  {"h.0", 168, 872, 872, 0, 872, 168},
                  {"h.1", 1040, 872, 872, 0, 872, 1040},
                  {"ln_f", 1912, 16, 16, 0, 16, 1912}});
  CHECK(l.total() == 1928);
  CHECK(l.shard_total() == 1928);
  CHECK(l.max_unit_padded() == 872);
  CHECK(l.unit_wte() == 0);
  CHECK(l.unit_wpe() == 1);
  CHECK(l.unit_block(0) == 2);
  CHECK(l.unit_lnf() == 4);
  CHECK(l.unit_head_wte() == 0);  // the head uses the primary table
  // h.0's parameters follow ln_1 (weight 8, bias 8): c_attn.weight [3C, C] starts 16 in.
  const LocalParam& qkv = l.find(2, "h.0.attn.c_attn.weight");
  CHECK(qkv.offset == 168 + 16);
  CHECK(qkv.numel == 192);
  CHECK(qkv.shape == std::vector<int64_t>{24, 8});
  CHECK(qkv.counts_in_norm);
  CHECK_THROWS_AS(l.find(2, "h.1.attn.c_attn.weight"), std::logic_error);
}

TEST_CASE("StageLayout: data 3 pads every unit to a multiple of 24 (8 x 3) and gives rank 1 the middle third") {
  const StageLayout l(tiny_gpt_config(), options(0, 1, 0, 1, 1, 3));
  check_units(l, {{"wte", 0, 128, 144, 48, 96, 0},
                  {"wpe", 144, 40, 48, 16, 32, 48},
                  {"h.0", 192, 872, 888, 296, 592, 64},
                  {"h.1", 1080, 872, 888, 296, 592, 360},
                  {"ln_f", 1968, 16, 24, 8, 16, 656}});
  CHECK(l.total() == 1992);
  CHECK(l.shard_total() == 664);
  // A block is ln_1 (16), c_attn (192 + 24), attn.c_proj (64 + 8), ln_2 (16), c_fc (256 + 32),
  // mlp.c_proj (256 + 8): the shard [296, 592) starts at attn.c_proj.bias and ends 16 elements
  // into c_fc.bias, which rank 2's shard goes on with.
  CHECK(l.owned_slice(l.find(2, "h.0.attn.c_proj.weight")).empty());
  CHECK(same(l.owned_slice(l.find(2, "h.0.attn.c_proj.bias")), range(0, 8)));
  CHECK(same(l.owned_slice(l.find(2, "h.0.mlp.c_fc.bias")), range(0, 16)));
  const StageLayout next(tiny_gpt_config(), options(0, 1, 0, 1, 2, 3));
  CHECK(same(next.owned_slice(next.find(2, "h.0.mlp.c_fc.bias")), range(16, 32)));
  // ln_f.weight is unit elements [0, 8), ln_f.bias [8, 16): the shard [8, 16) is the bias.
  CHECK(l.owned_slice(l.find(4, "ln_f.weight")).empty());
  CHECK(same(l.owned_slice(l.find(4, "ln_f.bias")), range(0, 8)));
}

TEST_CASE("StageLayout: every element of every parameter is owned by exactly one data rank") {
  for (int dp : {2, 3, 5}) {
    CAPTURE(dp);
    std::vector<StageLayout> ranks;
    for (int r = 0; r < dp; ++r) ranks.emplace_back(tiny_gpt_config(), options(0, 1, 0, 1, r, dp));
    for (size_t i = 0; i < ranks[0].params().size(); ++i) {
      const LocalParam& p = ranks[0].params()[i];
      CAPTURE(ranks[0].spec(p).name);
      int64_t next = 0;  // owned slices tile [0, numel) in rank order
      for (const StageLayout& l : ranks) {
        const Range own = l.owned_slice(l.params()[i]);
        if (own.empty()) continue;
        CHECK(own.begin == next);
        next = own.end;
      }
      CHECK(next == p.numel);
    }
  }
  // The last rank's shard of wte (data 3) is [96, 144); the elements past 128 are padding.
  const StageLayout last(tiny_gpt_config(), options(0, 1, 0, 1, 2, 3));
  CHECK(same(last.owned_slice(last.find(0, "wte.weight")), range(96, 128)));
}

TEST_CASE("StageLayout: pipeline 2 puts wte and wpe on stage 0, ln_f and a tied wte on stage 1") {
  const StageLayout first(tiny_gpt_config(), options(0, 1, 0, 2, 0, 1));
  check_units(first, {{"wte", 0, 128, 128, 0, 128, 0}, {"wpe", 128, 40, 40, 0, 40, 128}, {"h.0", 168, 872, 872, 0, 872, 168}});
  CHECK(first.global_layer(0) == 0);
  CHECK(first.n_layers() == 1);
  CHECK(first.has_embedding());
  CHECK(!first.has_head());
  CHECK(first.unit_lnf() == -1);
  CHECK(first.unit_head_wte() == -1);

  const StageLayout last(tiny_gpt_config(), options(0, 1, 1, 2, 0, 1));
  check_units(last, {{"h.1", 0, 872, 872, 0, 872, 0},
                     {"ln_f", 872, 16, 16, 0, 16, 872},
                     {"wte (tied copy)", 888, 128, 128, 0, 128, 888}});
  CHECK(last.total() == 1016);
  CHECK(last.global_layer(0) == 1);
  CHECK(last.unit_wte() == -1);
  CHECK(last.unit_wpe() == -1);
  CHECK(last.unit_block(0) == 0);
  CHECK(last.unit_lnf() == 1);
  CHECK(last.unit_head_wte() == 2);
  const LocalParam& tied = last.find(2, "wte.weight");
  CHECK(tied.copy == CopyKind::tied_copy);
  CHECK(!tied.counts_in_norm);  // stage 0's primary counts it
  CHECK(first.find(0, "wte.weight").counts_in_norm);
}

TEST_CASE("StageLayout: an explicit stage split, and the even split's remainder on early stages") {
  LayoutOptions o = options(0, 1, 0, 2, 0, 1);
  o.stage_layers = {2, 0};
  const StageLayout all_on_first(tiny_gpt_config(), o);
  CHECK(all_on_first.n_layers() == 2);
  CHECK(all_on_first.units().size() == 4);  // wte, wpe, h.0, h.1
  o.at.pp = 1;
  const StageLayout head_only(tiny_gpt_config(), o);
  CHECK(head_only.n_layers() == 0);
  CHECK(head_only.chunk_layers(0) == 0);
  CHECK_THROWS(head_only.global_layer(0));
  CHECK(head_only.units().size() == 2);  // ln_f, tied wte
  CHECK(split_layers(12, 5, {}) == std::vector<int>{3, 3, 2, 2, 2});
  CHECK(split_layers(12, 2, {5, 7}) == std::vector<int>{5, 7});
}

TEST_CASE("StageLayout: tensor rank 1 of 2 holds the second half of every split tensor") {
  const StageLayout l(tiny_gpt_config(), options(1, 2, 0, 1, 0, 1));
  // A block's 460 elements are padded to 464 (a multiple of 8), so the next unit starts aligned.
  check_units(l, {{"wte", 0, 64, 64, 0, 64, 0},
                  {"wpe", 64, 40, 40, 0, 40, 64},
                  {"h.0", 104, 460, 464, 0, 464, 104},
                  {"h.1", 568, 460, 464, 0, 464, 568},
                  {"ln_f", 1032, 16, 16, 0, 16, 1032}});
  const LocalParam& wte = l.find(0, "wte.weight");  // vocabulary rows 8..15
  CHECK(wte.shape == std::vector<int64_t>{8, 8});
  REQUIRE(wte.runs.size() == 1);
  CHECK(same(wte.runs[0], range(64, 128)));
  const LocalParam& qkv = l.find(2, "h.0.attn.c_attn.weight");  // heads 1 of q, k and v
  CHECK(qkv.shape == std::vector<int64_t>{12, 8});
  REQUIRE(qkv.runs.size() == 3);
  CHECK(same(qkv.runs[0], range(32, 64)));
  CHECK(same(qkv.runs[1], range(96, 128)));
  CHECK(same(qkv.runs[2], range(160, 192)));
  const LocalParam& proj = l.find(2, "h.0.attn.c_proj.weight");  // input columns 4..7 of each row
  CHECK(proj.shape == std::vector<int64_t>{8, 4});
  REQUIRE(proj.runs.size() == 8);
  CHECK(same(proj.runs[0], range(4, 8)));
  CHECK(same(proj.runs[7], range(60, 64)));
  // Replicated parameters count in the norm on tensor rank 0 only.
  CHECK(!l.find(2, "h.0.ln_1.weight").counts_in_norm);
  CHECK(!l.find(1, "wpe.weight").counts_in_norm);
  CHECK(qkv.counts_in_norm);
  const StageLayout rank0(tiny_gpt_config(), options(0, 2, 0, 1, 0, 1));
  CHECK(rank0.find(2, "h.0.ln_1.weight").counts_in_norm);
}

TEST_CASE("StageLayout: tensor 2 x pipeline 2 x data 2, the last stage's rank (tp 1, dp 1)") {
  const StageLayout l(tiny_gpt_config(), options(1, 2, 1, 2, 1, 2));
  check_units(l, {{"h.1", 0, 460, 464, 232, 464, 0},
                  {"ln_f", 464, 16, 16, 8, 16, 232},
                  {"wte (tied copy)", 480, 64, 64, 32, 64, 240}});
  CHECK(l.total() == 544);
  CHECK(l.shard_total() == 272);
  // The tied copy shards like stage 0's primary (same unit size), so both hold the same rows.
  const StageLayout stage0(tiny_gpt_config(), options(1, 2, 0, 2, 1, 2));
  CHECK(same(stage0.units()[size_t(stage0.unit_wte())].shard, l.units()[size_t(l.unit_head_wte())].shard));
}

TEST_CASE("StageLayout: virtual stages give each rank non-adjacent chunks, units in chunk order") {
  GptConfig cfg = tiny_gpt_config();
  cfg.n_layer = 6;
  // 2 ranks x 2 chunks = 4 virtual stages over 6 layers: [2, 2, 1, 1]; rank 0 holds virtual
  // stages 0 and 2 (layers 0-1 and 4), rank 1 holds 1 and 3 (layers 2-3 and 5).
  LayoutOptions o = options(0, 1, 0, 2, 0, 1);
  o.dims.virtual_stages = 2;
  const StageLayout first(cfg, o);
  CHECK(first.n_chunks() == 2);
  CHECK(first.n_layers() == 3);
  CHECK(first.chunk_layers(0) == 2);
  CHECK(first.chunk_layers(1) == 1);
  CHECK(first.chunk_first_local(1) == 2);
  CHECK(first.global_layer(0) == 0);
  CHECK(first.global_layer(1) == 1);
  CHECK(first.global_layer(2) == 4);
  CHECK(first.has_embedding());
  CHECK(!first.has_head());
  CHECK(first.units()[size_t(first.unit_block(2))].name == "h.4");
  o.at.pp = 1;
  const StageLayout last(cfg, o);
  CHECK(last.global_layer(0) == 2);
  CHECK(last.global_layer(2) == 5);
  CHECK(last.has_head());
  CHECK(last.units()[size_t(last.unit_block(2))].name == "h.5");
  CHECK(last.units()[size_t(last.unit_lnf())].name == "ln_f");
  // An explicit split names every virtual stage.
  o.stage_layers = {1, 1, 3, 1};
  const StageLayout split(cfg, o);
  CHECK(split.global_layer(0) == 1);
  CHECK(split.global_layer(1) == 5);
  o.stage_layers = {3, 3};
  CHECK_THROWS(StageLayout(cfg, o));
}

TEST_CASE("StageLayout: every unit, shard and parameter of real models starts 16-byte aligned at any data degree") {
  // gpt2-124m (768 = 2^8 x 3), gpt2-1.5b (1600 = 2^6 x 5^2), llama3.2-1b and smollm2-135m
  // (576 = 2^6 x 9): their units' sizes are multiples of 8 but not of every data degree, so
  // padding to dp alone would put the units after the first odd one at odd offsets.
  struct Model {
    const char* name;
    GptConfig config;
    std::vector<int> tensor;
  };
  GptConfig llama1b = gpt_config(16, 32, 2048, 128256, 128256, 2048);
  llama1b.arch = llama_family().arch;
  llama1b.n_kv_head = 8;
  llama1b.ffn_dim = 8192;
  GptConfig smollm = gpt_config(30, 9, 576, 49152, 49152, 2048);
  smollm.arch = llama_family().arch;
  smollm.n_kv_head = 3;
  smollm.ffn_dim = 1536;
  const Model models[] = {{"gpt2-124m", GptConfig{}, {1, 2, 4}},
                          {"gpt2-1.5b", gpt_config(48, 25, 1600, 50257, 50304, 1024), {1}},
                          {"llama3.2-1b", llama1b, {1, 2, 8}},
                          {"smollm2-135m", smollm, {1, 3}}};
  for (const Model& m : models) {
    const std::string name = m.name;
    CAPTURE(name);
    for (int tp : m.tensor)
      for (int pp : {1, 2})
        for (int dp : {1, 2, 3, 5, 6, 7, 12, 24}) {
          CAPTURE(tp);
          CAPTURE(pp);
          CAPTURE(dp);
          int bad = 0;
          for (int dp_rank : {0, dp - 1})
            for (int pp_rank = 0; pp_rank < pp; ++pp_rank) {
              const StageLayout l(m.config, options(tp - 1, tp, pp_rank, pp, dp_rank, dp));
              for (const LocalUnit& u : l.units())
                bad += (u.offset % 8 != 0) + ((u.offset + u.shard.begin) % 8 != 0) + (u.shard_offset % 8 != 0);
              for (const LocalParam& p : l.params()) bad += p.offset % 8 != 0;
            }
          CHECK(bad == 0);
        }
  }
}
