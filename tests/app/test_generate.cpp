// Generation with the KV cache (GptDecoder) against the full-window forward on one process:
// while the sequence fits train.seq_len both see the same tokens, so every new token's logits
// agree to rounding and greedy decoding picks the same tokens; past seq_len the cache restarts
// from the newest half of the context, and its logits are then those of that half alone. gpt2 and the llama variants (grouped k/v heads,
// qk_norm, tied and untied heads, Llama 3.1 rope scaling). The models are trained a few steps
// first so that their greedy choices are clear (random weights give near-ties). Generating
// between training steps leaves the next step's loss unchanged.
#include <doctest/doctest.h>

#include "app/engine/trainer.h"
#include "parallel/mpi_comm.h"
#include "tests/support/ensure_mpi.h"
#include "tests/support/test_util.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

void check_cache_matches_window(const Recipe& r, const std::string& what) {
  CAPTURE(what);
  ensure_mpi();
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const std::vector<int32_t> prompt = {3, 10, 17, 24, 31};
  const int T = r.train.seq_len, n = 2 * T + 3;
  const Generated cache = train_and_generate(r, self, 6, prompt, n, Decoding::kv_cache);
  const Generated window = train_and_generate(r, self, 6, prompt, n, Decoding::full_window);
  // Tokens 0 .. T-1 are in context for the first T - |prompt| + 1 choices.
  const int same = T - int(prompt.size()) + 1;
  REQUIRE(cache.tokens.size() == prompt.size() + size_t(n));
  REQUIRE(cache.logits.size() == size_t(n));
  CHECK(max_logit_diff(cache.logits, window.logits, same) < 1e-5);
  CHECK(std::vector<int32_t>(cache.tokens.begin(), cache.tokens.begin() + T + 1) ==
        std::vector<int32_t>(window.tokens.begin(), window.tokens.begin() + T + 1));
  for (int32_t id : cache.tokens) CHECK((id >= 0 && id < r.model.vocab_size));
  // The first choice past seq_len: the cache restarted from the newest T / 2 tokens, so its
  // logits are those of a fresh generation from exactly that context.
  const size_t k = size_t(T) + 1 - prompt.size(), end = prompt.size() + k;
  const std::vector<int32_t> context(cache.tokens.begin() + long(end - size_t(T / 2)), cache.tokens.begin() + long(end));
  const Generated fresh = train_and_generate(r, self, 6, context, 1, Decoding::kv_cache);
  CHECK(max_logit_diff({cache.logits[k]}, fresh.logits) < 1e-6);
  CHECK(max_logit_diff({cache.logits[k]}, {window.logits[k]}) > 1e-4);  // the window saw more
}

// One folder per test case: ctest runs the cases as separate processes, in parallel.
std::string shards(const std::string& name) {
  ensure_mpi();
  MpiComm self(MPI_COMM_SELF, "self", 120);
  return make_synthetic_shards(self, binary_dir() + "/test_scratch/generate_" + name, 97, 4096);
}

}  // namespace

TEST_CASE("generate: the KV cache gives the full window's logits, gpt2") {
  check_cache_matches_window(tiny_recipe(shards("gpt2"), TinyLayout{}, 2), "gpt2");
}

TEST_CASE("generate: the KV cache gives the full window's logits, llama variants") {
  TinyLayout l;
  l.arch = llama_family().arch;
  const std::string glob = shards("llama");
  check_cache_matches_window(tiny_recipe(glob, l, 2), "llama: 8 heads on 4 k/v heads, qk_norm, untied");
  Recipe r = tiny_recipe(glob, l, 2);
  r.model.n_kv_head = 1;
  r.model.qk_norm = false;
  r.model.tie_embeddings = true;
  r.model.rope_scaling = RopeScalingConfig{8.0, 1.0, 4.0, 8};
  check_cache_matches_window(r, "llama: multi-query, tied, rope scaling");
}

// Generation between training steps (sampling during a run) leaves the next step's loss as it
// was: the full-window forward computes logits only and adds no loss to the step's total.
TEST_CASE("generate: sampling between steps does not change the next step's loss") {
  ensure_mpi();
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const Recipe r = tiny_recipe(shards("between"), TinyLayout{}, 2);
  const std::vector<int32_t> prompt = {3, 10, 17};
  for (Decoding decoding : {Decoding::kv_cache, Decoding::full_window}) {
    CAPTURE(enum_name(kDecodingNames, decoding));
    Trainer a(r, self, 0), b(r, self, 0);
    a.train_step();
    b.train_step();
    GenerateOptions o;
    o.tokens = 4;
    o.decoding = decoding;
    b.generate(prompt, o);
    CHECK(b.train_step().loss == a.train_step().loss);
  }
}
