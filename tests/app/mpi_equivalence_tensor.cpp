// ranks: 2 4
// Tensor parallelism (alone, and with data parallelism and ZeRO): 10 steps give the same loss
// at every step and the same gathered final weights as one process.
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
  }
}
