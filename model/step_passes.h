// The forward and backward passes of one training step on this rank: every micro-batch through
// GptStage in the pipeline schedule's order, gradients accumulating in the ParamStore. The
// Trainer and the planner's dry run (app/plan/plan_dry_run.cpp) both run a step through this,
// so the plan replays exactly the calls a real step makes.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "model/gpt_stage.h"
#include "model/param_store.h"
#include "parallel/comm.h"
#include "parallel/pipeline_executor.h"
#include "parallel/parallel_dims.h"
#include "parallel/pipeline_links.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/trace_recorder.h"

namespace trainer {

// Where this rank sits in the pipeline and how the schedule runs there.
struct PipelineSeat {
  Schedule schedule = Schedule::one_f_one_b;  // used only with more than one stage
  int pp_rank = 0;
  ParallelDims dims;               // pipeline and virtual stages (chunks on this rank) matter here
  int n_slots = 1;                 // GptStage's activation slots per chunk (max_in_flight)
  PipelineComms comms;             // the pipeline's communicators (all null: one stage)
  TraceRecorder* trace = nullptr;  // forward and backward spans per micro-batch (null: none)
  EventTimer* wait_timer = nullptr;  // times the pipeline's waits on the device (PipelineHooks)
};

// per_pass: synchronise the device after each forward and backward so their times are exact.
enum class PassTiming : uint8_t { overlapped, per_pass };

struct StepPassTimes {
  double forward_s = 0;
  double backward_s = 0;
  PipelineTimes waits;  // waiting on pipeline messages: total_wait_s once the device has caught up
};

// inputs[i], targets[i]: micro-batch i's (B, T) tokens; one micro-batch per entry.
StepPassTimes run_step_passes(GptStage& stage, ParamStore& store, Backend& backend, const PipelineSeat& seat,
                              const std::vector<std::vector<int32_t>>& inputs,
                              const std::vector<std::vector<int32_t>>& targets, PassTiming timing);

}  // namespace trainer
