// ranks: 2 4
// Packed documents under every kind of parallelism: with train.attention_mask: document and
// positions restarting per document (gpt2's learned table and llama's rotary ones), tensor
// 2/4 with sequence parallelism, pipeline 2/4 with 1f1b, zero_bubble and interleaved, data
// 2/4 with ZeRO 3, and data 2 x tensor 2, train 10 steps with the same loss at every step and
// the same final weights as one process. The corpus packs documents of 1 to 9 tokens, so
// every 16-token row holds several.
#include <doctest/doctest.h>
#include <mpi.h>

#include <filesystem>
#include <string>
#include <vector>

#include "parallel/mpi_comm.h"
#include "tests/support/test_util.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

constexpr int kDocumentToken = 0;

// Two shards of short documents, each opened by kDocumentToken, on rank 0; returns the glob.
std::string packed_shards(Comm& world, const std::string& dir) {
  if (world.rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    uint64_t x = 99;
    for (int shard = 0; shard < 2; ++shard) {
      std::vector<int> tokens;
      while (tokens.size() < 4096) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const int len = 1 + int((x >> 33) % 9), first = 1 + int((x >> 20) % 90);
        tokens.push_back(kDocumentToken);
        for (int k = 0; k < len; ++k) tokens.push_back(1 + (first + 7 * k) % 96);  // learnable within a document
      }
      write_token_shard(dir + "/train_" + std::to_string(shard) + ".bin", tokens);
    }
  }
  world.barrier();
  return dir + "/train_*.bin";
}

Recipe documents_recipe(const std::string& glob, const TinyLayout& layout, int accum) {
  Recipe r = tiny_recipe(glob, layout, accum);
  r.train.attention_mask = AttentionMask::document;
  r.train.reset_positions = true;
  r.data.document_token = std::to_string(kDocumentToken);
  return r;
}

}  // namespace

TEST_CASE("packed documents: every parallel layout equals one process") {
  MpiComm world(MPI_COMM_WORLD, "world", 120);
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const int n = world.size();
  const std::string glob = packed_shards(world, binary_dir() + "/test_scratch/mpi_documents_" + std::to_string(n));
  const int accum = 3;
  for (ModelArch arch : {gpt2_family().arch, llama_family().arch}) {
    const std::string family = model_arch_name(arch);
    CAPTURE(family);
    auto at = [&](int data, int tensor, int pipeline, int zero) { return tiny_layout(arch, data, tensor, pipeline, zero); };
    const TinyLayout one = at(1, 1, 1, 0);
    const RunOutput ref = run_recipe(documents_recipe(glob, one, accum), self, 10);
    // The control: without the mask the losses differ (the check can fail).
    Recipe causal = tiny_recipe(glob, one, accum);
    CHECK(run_recipe(causal, self, 2).losses[1] != doctest::Approx(ref.losses[1]).epsilon(1e-6));

    TinyLayout tp = at(1, n, 1, 0);
    tp.sequence_parallel = true;
    check_matches_reference(run_recipe(documents_recipe(glob, tp, accum), world, 10), ref);
    for (Schedule s : {Schedule::one_f_one_b, Schedule::zero_bubble}) {
      const std::string schedule = schedule_name(s);
      CAPTURE(schedule);
      TinyLayout pp = at(1, 1, n, 0);
      pp.schedule = s;
      check_matches_reference(run_recipe(documents_recipe(glob, pp, accum), world, 10), ref);
    }
    TinyLayout deep = one;
    deep.n_layer = 2 * n;
    TinyLayout il = at(1, 1, n, 0);
    il.n_layer = 2 * n;
    il.schedule = Schedule::interleaved;
    il.virtual_stages = 2;
    check_matches_reference(run_recipe(documents_recipe(glob, il, 4), world, 10),
                            run_recipe(documents_recipe(glob, deep, 4), self, 10));
    const RunOutput ref_dp = run_recipe(documents_recipe(glob, one, accum * n), self, 10);
    check_matches_reference(run_recipe(documents_recipe(glob, at(n, 1, 1, 3), accum), world, 10), ref_dp);
    if (n == 4) {
      const RunOutput ref2 = run_recipe(documents_recipe(glob, one, accum * 2), self, 10);
      check_matches_reference(run_recipe(documents_recipe(glob, at(2, 2, 1, 1), accum), world, 10), ref2);
    }
  }
}
