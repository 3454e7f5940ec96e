// ranks: 2 4 8
// The llama model (grouped-query attention with n_kv_head < n_head, qk_norm, untied head)
// under every kind of parallelism, as GPT-2 is in mpi_equivalence_{data,tensor,pipeline}:
// data 2/4 x ZeRO 0-3; tensor 2/4 with and without sequence parallelism; tensor 2 x data 2;
// pipeline 2/4 with every schedule (interleaved over 2 virtual stages, 4 micro-batches;
// zero_bubble);
// pipeline 2 x tensor 2 x data 2 with ZeRO 1. 10 steps give
// the same loss at every step and the same final weights as one process.
#include <doctest/doctest.h>
#include <mpi.h>

#include "parallel/mpi_comm.h"
#include "tests/support/test_util.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

TinyLayout llama(int data, int tensor, int pipeline, int zero) {
  return tiny_layout(llama_family().arch, data, tensor, pipeline, zero);
}

}  // namespace

TEST_CASE("llama: every parallel layout equals one process") {
  MpiComm world(MPI_COMM_WORLD, "world", 120);
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const int n = world.size();
  std::string glob = make_synthetic_shards(world, binary_dir() + "/test_scratch/mpi_llama_" + std::to_string(n), 97, 4096);
  const int accum = 3;
  const TinyLayout one = llama(1, 1, 1, 0);
  RunOutput ref = run_recipe(tiny_recipe(glob, one, accum), self, 10);

  if (n == 2 || n == 4) {
    RunOutput ref_dp = run_recipe(tiny_recipe(glob, one, accum * n), self, 10);
    for (int zero : {0, 1, 2, 3}) {
      CAPTURE(zero);
      check_matches_reference(run_recipe(tiny_recipe(glob, llama(n, 1, 1, zero), accum), world, 10), ref_dp);
    }
    for (bool sp : {false, true}) {
      CAPTURE(sp);
      TinyLayout l = llama(1, n, 1, 0);
      l.sequence_parallel = sp;
      check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref);
    }
    for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::zero_bubble}) {
      std::string schedule = schedule_name(s);
      CAPTURE(schedule);
      TinyLayout l = llama(1, 1, n, 0);
      l.schedule = s;
      check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref);
    }
    TinyLayout deep = one;
    deep.n_layer = 2 * n;
    TinyLayout il = llama(1, 1, n, 0);
    il.n_layer = 2 * n;
    il.schedule = Schedule::interleaved;
    il.virtual_stages = 2;
    check_matches_reference(run_recipe(tiny_recipe(glob, il, 4), world, 10), run_recipe(tiny_recipe(glob, deep, 4), self, 10));
  }
  if (n == 4) {
    RunOutput ref2 = run_recipe(tiny_recipe(glob, one, accum * 2), self, 10);
    check_matches_reference(run_recipe(tiny_recipe(glob, llama(2, 2, 1, 1), accum), world, 10), ref2);
  }
  if (n == 8) {
    RunOutput ref2 = run_recipe(tiny_recipe(glob, one, accum * 2), self, 10);
    check_matches_reference(run_recipe(tiny_recipe(glob, llama(2, 2, 2, 1), accum), world, 10), ref2);
  }
}
