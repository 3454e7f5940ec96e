// One step's forward and backward passes (see step_passes.h).
#include "model/step_passes.h"

#include <functional>

#include "kernels/base/clock.h"
#include "parallel/pipeline_executor.h"

namespace trainer {

StepPassTimes run_step_passes(GptStage& stage, ParamStore& store, Backend& backend, const PipelineSeat& seat,
                              const std::vector<std::vector<int32_t>>& inputs,
                              const std::vector<std::vector<int32_t>>& targets, PassTiming timing) {
  const int m = int(inputs.size());
  const Schedule schedule = seat.dims.pipelined() ? seat.schedule : Schedule::one_f_one_b;
  StepPassTimes times;
  PipelineHooks hooks;
  // One compute pass, traced and timed into *total.
  auto pass = [&](const char* name, double* total, int i, int c, const std::function<void()>& body) {
    TraceScope span(seat.trace, name, "compute",
                    {TraceArg::num("micro", i), TraceArg::num("stage", seat.pp_rank), TraceArg::num("chunk", c)});
    const double t0 = monotonic_seconds();
    body();
    if (timing == PassTiming::per_pass) backend.synchronize();
    *total += monotonic_seconds() - t0;
  };
  hooks.forward = [&](int i, int c) {
    pass("forward", &times.forward_s, i, c, [&] {
      stage.set_batch(i, c, inputs[size_t(i)].data(), targets[size_t(i)].data());
      stage.forward(i, c, StageMode::train);
    });
  };
  // A chunk's last micro-batch is the last contribution to its units' gradients (under the
  // split, its weight pass is for the blocks).
  hooks.backward = [&](int i, int c) {
    pass("backward", &times.backward_s, i, c, [&] {
      store.begin_micro(i == m - 1);
      stage.backward(i, c);
    });
  };
  hooks.backward_weight = [&](int i, int c) {
    pass("backward_weight", &times.backward_s, i, c, [&] {
      store.begin_micro(i == m - 1);
      stage.backward_weight(i, c);
    });
  };
  hooks.recv_act_buffer = [&](int i, int c) { return stage.recv_act_buffer(i, c); };
  hooks.send_act_buffer = [&](int i, int c) { return stage.send_act_buffer(i, c); };
  hooks.recv_grad_buffer = [&](int i, int c) { return stage.recv_grad_buffer(i, c); };
  hooks.send_grad_buffer = [&](int i, int c) { return stage.send_grad_buffer(i, c); };
  hooks.wait_timer = seat.wait_timer;
  TraceScope span(seat.trace, "pipeline", "compute", {TraceArg::num("micro_batches", m), TraceArg::num("stage", seat.pp_rank)});
  const PipeShape shape{schedule, seat.dims.pipeline, m, seat.dims.chunks_per_rank()};
  const PipelineTimes pt = run_pipeline(make_schedule(shape, seat.pp_rank), seat.dims.pipelined() ? seat.comms : PipelineComms{},
                                        seat.pp_rank, m, seat.n_slots, hooks);
  times.waits = pt;
  return times;
}

}  // namespace trainer
