// Start-of-run report (see run_report.h).
#include "app/engine/run_report.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <cstdlib>

#include "app/plan/flops.h"
#include "app/engine/launch_report.h"
#include "app/engine/options_from.h"
#include "parallel/pipeline_schedule.h"

namespace trainer {

std::string memory_line(const RankMemory& m) {
  const MemoryFigures& p = m.params;
  return fmt::format(
      "params {} | master {} | grads {} | optimizer {} | comm buffers {} | activations {} ({} per micro-batch x {} + "
      "scratch {}) | total {}",
      format_bytes(p.params), format_bytes(p.master), format_bytes(p.grads), format_bytes(p.optimizer),
      format_bytes(p.comm), format_bytes(m.activations.total()), format_bytes(m.activations.per_slot),
      m.activations.slots, format_bytes(m.activations.scratch()), format_bytes(m.total()));
}

namespace {

// Collective over the host world: the launch facts, whole on rank 0.
LaunchFacts launch_facts(Trainer& t, const MpiRuntime& mpi) {
  LaunchFacts f;
  f.env = launcher_env();
  Comm& world = t.host_world();
  f.world = world.size();
  f.local_rank = mpi.local_rank();
  f.local_size = mpi.local_size();
  f.gpu = t.backend().device() == Device::cuda;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) f.visible_devices = v;
  const bool mismatch = f.env.local_id >= 0 && f.env.local_id != f.local_rank;
  int32_t count = mismatch ? 1 : 0;
  int32_t first = mismatch ? world.size() - world.rank() : 0;  // max picks the lowest rank
  world.all_reduce(make_tensor(&count, DType::i32, Device::cpu, {1}), ReduceOp::sum);
  world.all_reduce(make_tensor(&first, DType::i32, Device::cpu, {1}), ReduceOp::max);
  f.mismatched_ranks = count;
  f.first_mismatch = count > 0 ? world.size() - first : -1;
  return f;
}

}  // namespace

void print_run_report(Trainer& t, const MpiRuntime& mpi, Reporting reporting) {
  const Recipe& r = t.recipe();
  const GptConfig& c = t.config();
  RankMemory mem = t.memory();
  float totals[1] = {float(mem.total())};
  t.host_world().all_reduce(make_tensor(totals, DType::f32, Device::cpu, {1}), ReduceOp::max);
  const LaunchFacts launch = launch_facts(t, mpi);
  if (reporting == Reporting::off) return;
  const std::string launch_text = launch_line(launch);
  if (!launch_text.empty()) fmt::print("{}\n", launch_text);
  const ParallelConfig& p = r.parallel;
  fmt::print("model: {}; {:.2f}M parameters\n", describe_shape(c), double(c.num_params()) / 1e6);
  // bf16 reductions say so, also where one data rank leaves nothing to reduce.
  const char* reduce = p.grad_reduce_dtype != GradReduceDType::bf16 ? ""
                       : p.data_parallel() ? "; gradients reduced in bf16"
                                    : "; gradients never reduced (data 1): grad_reduce_dtype bf16 changes nothing";
  fmt::print("layout: world {} = data {} x tensor {} x pipeline {}; zero {}{}{}; device {} = {} ({} threads per rank); "
             "micro-batch {} x {} tokens; global batch {} sequences ({} tokens); {} micro-batch{} per data rank per "
             "step\n",
             r.world(), p.data, p.tensor, p.pipeline, p.zero, p.sequence_parallel ? "; sequence parallel" : "", reduce,
             t.backend().name(), t.backend().device_name(), omp_get_max_threads(), r.train.micro_batch,
             r.train.seq_len, r.train.global_batch, t.tokens_per_step(), r.grad_accum(), r.grad_accum() == 1 ? "" : "es");
  if (p.pipelined()) {
    fmt::print("pipeline: schedule {}, {} stages, {} micro-batch{}, bubble fraction {:.3f}\n",
               schedule_name(p.schedule), p.pipeline, r.grad_accum(), r.grad_accum() == 1 ? "" : "es",
               bubble_fraction(pipe_shape_from(r)));
    if (p.interleaved())
      fmt::print("pipeline: {} virtual stages per rank, layers per virtual stage [{}]\n", p.virtual_stages,
                 fmt::join(split_layers(r.model.n_layer, p.n_stages(), p.stages), ", "));
  }
  fmt::print("memory (rank 0): {}\n", memory_line(mem));
  if (r.world() > 1) fmt::print("memory (largest rank total): {}\n", format_bytes(int64_t(totals[0])));
  fmt::print("flops per token: {:.4g}\n", flops_per_token(c, r.train.seq_len));
  const StartupSeconds& up = t.startup_seconds();
  fmt::print("start-up (rank 0): {:.2f} s to build the rank's objects, {:.2f} s of it initialising the parameters "
             "({:.2f} s of CPU)\n",
             up.total, up.params, up.params_cpu);
  std::fflush(stdout);
}

}  // namespace trainer
