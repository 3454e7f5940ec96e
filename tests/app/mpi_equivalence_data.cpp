// ranks: 2 4
// Data parallelism and ZeRO 0-3: 10 steps with 2 micro-batches of gradient accumulation per
// data rank give the same loss at every step and the same final weights as one process
// training on the same global batch.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>

#include "parallel/mpi_comm.h"
#include "tests/support/test_util.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("data parallel x zero 0..3 equals one process") {
  MpiComm world(MPI_COMM_WORLD, "world", 120);
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const int dp = world.size();
  std::string glob = make_synthetic_shards(world, binary_dir() + "/test_scratch/mpi_data_" + std::to_string(dp), 97, 4096);
  const int accum = 2;
  TinyLayout single;
  Recipe ref_recipe = tiny_recipe(glob, single, accum * dp);
  RunOutput ref = run_recipe(ref_recipe, self, 10);
  for (int zero = 0; zero <= 3; ++zero) {
    CAPTURE(zero);
    TinyLayout l;
    l.data = dp;
    l.zero = zero;
    check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref);
  }
}
