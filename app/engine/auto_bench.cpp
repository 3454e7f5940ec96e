// Timing a candidate layout for parallel.auto_bench (see auto_bench.h).
#include "app/engine/auto_bench.h"

#include "app/engine/metrics.h"
#include "app/engine/trainer.h"

namespace trainer {

double time_layout_on_job(const Recipe& recipe, Comm& world, int local_rank) {
  Recipe quiet = recipe;
  quiet.checkpoint.dir.clear();
  quiet.eval.every = 0;
  quiet.log.trace.clear();
  quiet.log.metrics.clear();
  quiet.log.sample_every = 0;
  Trainer t(quiet, world, local_rank, DataNeed::none);
  t.train_step();  // warm-up: first-touch allocations, BLAS and communicator set-up
  float start = 0;
  world.all_reduce(make_tensor(&start, DType::f32, Device::cpu, {1}), ReduceOp::max);  // start together
  const double t0 = monotonic_seconds();
  for (int i = 0; i < kAutoBenchSteps; ++i) t.train_step();
  t.backend().synchronize();
  float step_s = float((monotonic_seconds() - t0) / kAutoBenchSteps);
  world.all_reduce(make_tensor(&step_s, DType::f32, Device::cpu, {1}), ReduceOp::max);
  return double(step_s);
}

}  // namespace trainer
