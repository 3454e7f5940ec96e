// ranks: 2 4 8
// Pipeline parallelism with every schedule (pipeline = world for 2 and 4 ranks; interleaved
// over 2 and 3 virtual stages; zero_bubble), pipeline 2 x data 2 with ZeRO-2 (4 ranks, also
// zero_bubble and interleaved), and the full 3D layout pipeline 2 x tensor 2 x data 2 with ZeRO-1, also
// interleaved and zero_bubble (8 ranks): 10 steps give
// the same loss at every step and the same final weights as one process.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>

#include "parallel/mpi_comm.h"
#include "tests/support/test_util.h"
#include "tests/support/train_harness.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("pipeline parallel equals one process") {
  MpiComm world(MPI_COMM_WORLD, "world", 120);
  MpiComm self(MPI_COMM_SELF, "self", 120);
  const int n = world.size();
  std::string glob = make_synthetic_shards(world, binary_dir() + "/test_scratch/mpi_pipe_" + std::to_string(n), 97, 4096);
  if (n == 2 || n == 4) {
    const int accum = 5;  // more micro-batches than stages, and not a multiple of them
    RunOutput ref = run_recipe(tiny_recipe(glob, TinyLayout{}, accum), self, 10);
    for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::zero_bubble}) {
      std::string schedule = schedule_name(s);
      CAPTURE(schedule);
      TinyLayout l;
      l.pipeline = n;
      l.schedule = s;
      check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref);
    }
    if (n == 4) {
      // Pipelining with data parallelism and ZeRO-2 (gradients reduce-scattered per unit,
      // the tied embedding's shards summed between the first and last stage).
      RunOutput ref2 = run_recipe(tiny_recipe(glob, TinyLayout{}, accum * 2), self, 10);
      TinyLayout pz;
      pz.pipeline = 2;
      pz.data = 2;
      pz.zero = 2;
      check_matches_reference(run_recipe(tiny_recipe(glob, pz, accum), world, 10), ref2);
      pz.schedule = Schedule::zero_bubble;
      check_matches_reference(run_recipe(tiny_recipe(glob, pz, accum), world, 10), ref2);
      // Interleaved under ZeRO-2: every chunk's units reduce-scattered per micro-batch.
      pz.schedule = Schedule::interleaved;
      pz.virtual_stages = 2;
      check_matches_reference(run_recipe(tiny_recipe(glob, pz, 4), world, 10),
                              run_recipe(tiny_recipe(glob, TinyLayout{}, 8), self, 10));
    }
    // Interleaved: micro-batches in whole groups of the stages (4 per step), at least a layer
    // per virtual stage (2 x 2 over 4 layers, 2 x 3 over 7, unevenly, 4 x 2 over 8).
    for (auto [v, layers] : {std::pair{2, 4}, std::pair{3, 7}}) {
      if (n != 2 && v == 3) continue;
      const int chunks = v;
      TinyLayout ref_shape;
      ref_shape.n_layer = n == 4 ? 8 : layers;
      TinyLayout il = ref_shape;
      il.pipeline = n;
      il.schedule = Schedule::interleaved;
      il.virtual_stages = chunks;
      CAPTURE(chunks);
      RunOutput ref_il = run_recipe(tiny_recipe(glob, ref_shape, 4), self, 10);
      check_matches_reference(run_recipe(tiny_recipe(glob, il, 4), world, 10), ref_il);
    }
    TinyLayout one_micro;
    one_micro.pipeline = n;
    RunOutput ref1 = run_recipe(tiny_recipe(glob, TinyLayout{}, 1), self, 3);
    RunOutput out1 = run_recipe(tiny_recipe(glob, one_micro, 1), world, 3);
    CHECK(std::fabs(out1.losses.back() - ref1.losses.back()) <= 1e-5 * ref1.losses.back());
  }
  if (n == 8) {
    const int accum = 2;
    RunOutput ref = run_recipe(tiny_recipe(glob, TinyLayout{}, accum * 2), self, 10);
    TinyLayout l;
    l.pipeline = 2;
    l.tensor = 2;
    l.data = 2;
    l.zero = 1;
    check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref);
    l.schedule = Schedule::interleaved;
    l.virtual_stages = 2;
    check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref);
    l.schedule = Schedule::zero_bubble;
    l.virtual_stages = 1;
    check_matches_reference(run_recipe(tiny_recipe(glob, l, accum), world, 10), ref);
  }
}
