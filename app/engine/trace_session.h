// TraceSession: the timeline trace of a run (log.trace, log.trace_steps). It owns this rank's
// TraceRecorder, turns it on for the steps [first, last] of log.trace_steps and, when the last
// of them is done (or the run ends earlier), gathers every rank's events on rank 0, which writes
// one Chrome trace-event file (README "Timeline traces"): {"traceEvents": [...],
// "displayTimeUnit": "ms", "otherData": {...}}, one process per rank (pid = world rank, named
// "rank R (data D, tensor T, pipeline P)"), spans of category step, data, compute, comm, sync,
// optimizer, eval, checkpoint, sample; on a GPU a second track per rank, "device", holds the
// compute, optimizer and eval spans as the GPU ran them.
// Invariants: begin_step, after_step and finish are collective over the host world and every
// rank calls them at the same steps (the training loop runs in lockstep), so the barrier that
// aligns the ranks' clocks and the gathering always meet. The file is written once, atomically.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "app/recipe/recipe.h"
#include "kernels/backend.h"
#include "parallel/comm.h"
#include "parallel/process_grid.h"
#include "parallel/trace_recorder.h"

namespace trainer {

class TraceSession {
 public:
  // host_world: the MPI world (host buffers), used for the barrier and for gathering.
  TraceSession(const LogConfig& log, Comm& host_world);
  TraceRecorder& recorder() { return recorder_; }
  // Names this rank's track by its coordinates (once the grid exists).
  void name_rank(const GridCoords& coords);
  // On a GPU backend, compute, optimizer and eval spans also appear on a device track timed by
  // the backend's events (TraceRecorder's device spans); a CPU backend has no separate device.
  void attach_device(Backend& backend);
  // Before step `step` (1-based) is computed: starts recording at the first traced step.
  void begin_step(int64_t step);
  // After step `step` and what follows it (evaluation, sampling, a checkpoint): ends the trace
  // after the last traced step.
  void after_step(int64_t step);
  // Ends the trace now if it is recording (the run stops early); a trace that never started
  // prints a note. Idempotent.
  void finish();

 private:
  enum class State : uint8_t { waiting, recording, done };
  void write();

  std::string path_;
  int64_t first_, last_;
  Comm& world_;
  TraceRecorder recorder_;
  std::unique_ptr<EventTimer> device_timer_;
  State state_ = State::waiting;
};

}  // namespace trainer
