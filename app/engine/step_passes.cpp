// One step's forward and backward passes (see step_passes.h).
#include "app/engine/step_passes.h"

#include "app/engine/metrics.h"
#include "parallel/pipeline_executor.h"

namespace trainer {

StepPassTimes run_step_passes(GptStage& stage, ParamStore& store, Backend& backend, const PipelineSeat& seat,
                              const std::vector<std::vector<int32_t>>& inputs,
                              const std::vector<std::vector<int32_t>>& targets, PassTiming timing) {
  const int m = int(inputs.size());
  const Schedule schedule = seat.pp == 1 ? Schedule::one_f_one_b : seat.schedule;
  StepPassTimes times;
  PipelineHooks hooks;
  hooks.forward = [&](int i) {
    TraceScope span(seat.trace, "forward", "compute", {TraceArg::num("micro", i), TraceArg::num("stage", seat.pp_rank)});
    const double t0 = monotonic_seconds();
    stage.set_batch(i, inputs[size_t(i)].data(), targets[size_t(i)].data());
    stage.forward(i, StageMode::train);
    if (timing == PassTiming::per_pass) backend.synchronize();
    times.forward_s += monotonic_seconds() - t0;
  };
  hooks.backward = [&](int i) {
    TraceScope span(seat.trace, "backward", "compute", {TraceArg::num("micro", i), TraceArg::num("stage", seat.pp_rank)});
    const double t0 = monotonic_seconds();
    store.begin_micro(i == m - 1);
    stage.backward(i);
    if (timing == PassTiming::per_pass) backend.synchronize();
    times.backward_s += monotonic_seconds() - t0;
  };
  hooks.recv_act_buffer = [&](int i) { return stage.recv_act_buffer(i); };
  hooks.send_act_buffer = [&](int i) { return stage.send_act_buffer(i); };
  hooks.recv_grad_buffer = [&](int i) { return stage.recv_grad_buffer(i); };
  hooks.send_grad_buffer = [&](int i) { return stage.send_grad_buffer(i); };
  const bool piped = seat.pp > 1;
  TraceScope span(seat.trace, "pipeline", "compute", {TraceArg::num("micro_batches", m), TraceArg::num("stage", seat.pp_rank)});
  const PipelineTimes pt = run_pipeline(make_schedule(schedule, seat.pp_rank, seat.pp, m),
                                        piped ? seat.act_comm : nullptr, piped ? seat.grad_comm : nullptr,
                                        seat.pp_rank, seat.n_slots, hooks);
  times.wait_s = pt.wait_s;
  return times;
}

}  // namespace trainer
