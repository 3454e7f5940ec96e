// ranks: 2 4 8
// Generation with the KV cache on a model split across ranks (tensor groups split heads and
// the vocabulary, pipeline stages pass the new rows' activations, data replicas and ZeRO
// shards all follow along; interleaved chunks decode round the ring) gives the logits and
// greedy tokens of one process, for gpt2 and llama (grouped k/v heads, qk_norm), past seq_len
// (the cache's restart) included.
#include <doctest/doctest.h>
#include <mpi.h>

#include "parallel/mpi_comm.h"
#include "tests/support/test_util.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("generation: every parallel layout decodes what one process decodes") {
  MpiComm world(MPI_COMM_WORLD, "world", 120);
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const int n = world.size();
  const std::string glob =
      make_synthetic_shards(world, binary_dir() + "/test_scratch/mpi_generate_" + std::to_string(n), 97, 4096);
  const std::vector<int32_t> prompt = {5, 12, 19};
  const int tokens = 40;  // past seq_len 16: the cache restarts twice
  for (ModelArch arch : {gpt2_family().arch, llama_family().arch}) {
    CAPTURE(int(arch));
    std::vector<TinyLayout> layouts;
    // Interleaved: each rank's chunks decode in turn round the ring of stages.
    TinyLayout ring = tiny_layout(arch, 1, 1, n == 8 ? 2 : n, 0);
    ring.schedule = Schedule::interleaved;
    ring.virtual_stages = 2;
    ring.n_layer = 2 * ring.pipeline;
    if (n == 2) layouts = {tiny_layout(arch, 1, 2, 1, 0), tiny_layout(arch, 1, 1, 2, 0), tiny_layout(arch, 2, 1, 1, 1), ring};
    if (n == 4) layouts = {tiny_layout(arch, 1, 2, 2, 0), tiny_layout(arch, 2, 2, 1, 1), ring};
    if (n == 8) layouts = {tiny_layout(arch, 2, 2, 2, 3)};
    for (const TinyLayout& l : layouts) {
      CAPTURE(l.data);
      CAPTURE(l.tensor);
      CAPTURE(l.pipeline);
      CAPTURE(l.virtual_stages);
      // The same global batch on one process: accum * data micro-batches.
      TinyLayout one = tiny_layout(arch, 1, 1, 1, 0);
      one.n_layer = l.n_layer;
      // (Interleaved: micro-batches in whole groups of the stages.)
      const int accum = l.virtual_stages > 1 ? l.pipeline : 2;
      const Generated ref = train_and_generate(tiny_recipe(glob, one, accum * l.data), self, 4, prompt, tokens,
                                               Decoding::kv_cache);
      const Generated got =
          train_and_generate(tiny_recipe(glob, l, accum), world, 4, prompt, tokens, Decoding::kv_cache);
      CHECK(got.tokens == ref.tokens);
      if (l.virtual_stages > 1) {
        // The full-window forward too (the forward-only schedule over the chunks).
        const Generated window =
            train_and_generate(tiny_recipe(glob, l, accum), world, 4, prompt, 8, Decoding::full_window);
        const Generated window_ref =
            train_and_generate(tiny_recipe(glob, one, accum * l.data), self, 4, prompt, 8, Decoding::full_window);
        CHECK(window.tokens == window_ref.tokens);
        if (!window.logits.empty()) CHECK(max_logit_diff(window.logits, window_ref.logits) < 1e-5);
      }
      // Exactly the ranks of the last stage see the logits, every token's.
      float holders = got.logits.empty() ? 0.0f : 1.0f;
      world.all_reduce(make_tensor(&holders, DType::f32, Device::cpu, {1}), ReduceOp::sum);
      CHECK(holders == float(l.data * l.tensor));
      if (!got.logits.empty()) {
        CHECK(got.logits.size() == size_t(tokens));
        CHECK(max_logit_diff(got.logits, ref.logits) < 1e-5);
      }
    }
  }
}
