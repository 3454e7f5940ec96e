// ranks: 2 4
// Tensor parallelism (alone, and with data parallelism and ZeRO), without and with sequence
// parallelism: 10 steps give the same loss at every step and the same gathered final weights
// as one process.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>

#include "parallel/mpi_comm.h"
#include "tests/support/test_util.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("tensor parallel equals one process") {
  MpiComm world(MPI_COMM_WORLD, "world", 120);
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const int n = world.size();
  std::string glob = make_synthetic_shards(world, binary_dir() + "/test_scratch/mpi_tensor_" + std::to_string(n), 97, 4096);
  const int accum = 2;

  RunOutput ref = run_recipe(tiny_recipe(glob, TinyLayout{}, accum), self, 10);
  TinyLayout tp_only;
  tp_only.tensor = n;
  check_matches_reference(run_recipe(tiny_recipe(glob, tp_only, accum), world, 10), ref);
  tp_only.sequence_parallel = true;
  check_matches_reference(run_recipe(tiny_recipe(glob, tp_only, accum), world, 10), ref);

  if (n == 4) {
    RunOutput ref2 = run_recipe(tiny_recipe(glob, TinyLayout{}, accum * 2), self, 10);
    for (int zero : {0, 1, 3}) {
      CAPTURE(zero);
      TinyLayout l;
      l.tensor = 2;
      l.data = 2;
      l.zero = zero;
      check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref2);
    }
    // Sequence parallelism with data parallelism and ZeRO-2, and with a pipeline (the stages
    // exchange only their rows of the residual stream).
    TinyLayout sp_dp;
    sp_dp.tensor = 2;
    sp_dp.data = 2;
    sp_dp.zero = 2;
    sp_dp.sequence_parallel = true;
    check_matches_reference(run_recipe(tiny_recipe(glob, sp_dp, accum), world, 10), ref2);
    TinyLayout sp_pp;
    sp_pp.tensor = 2;
    sp_pp.pipeline = 2;
    sp_pp.sequence_parallel = true;
    check_matches_reference(run_recipe(tiny_recipe(glob, sp_pp, accum), world, 10), ref);
  }
}
