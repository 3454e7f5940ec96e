// Trainer: turns a recipe into the objects of one training run on this rank (backend, process
// grid, stage layout, parameter store, model stage, data loaders) and runs optimizer steps,
// evaluation and sampling through the pipeline executor. Every rank of the job constructs one;
// all their calls are collective, in the same order on every rank.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_parts.h"
#include "app/engine/options_from.h"
#include "app/engine/step_graphs.h"
#include "app/engine/trace_session.h"
#include "app/recipe/recipe.h"
#include "data/loader.h"
#include "kernels/backend.h"
#include "kernels/base/enum_names.h"
#include "kernels/op_profiler.h"
#include "model/gpt_stage.h"
#include "model/lr_schedule.h"
#include "model/param_store.h"
#include "model/rank_model.h"
#include "model/stage_layout.h"
#include "model/step_passes.h"
#include "parallel/process_grid.h"

namespace trainer {

struct StepTimes {
  double total_s = 0;
  double compute_s = 0;    // forward + backward (including tensor-parallel collectives)
  double forward_s = 0;    // exact only with set_sync_timing(true) on asynchronous devices;
                           // under train.graphs: step, forward and backward together
  double backward_s = 0;
  double pipeline_wait_s = 0;
  double grad_sync_s = 0;  // finishing data-parallel reductions, tied-embedding sum, grad norm
  double optimizer_s = 0;
};

// A validation pass: the loss of each data.val source and their mean weighted by the sources'
// weights (the loss on the validation mix); one source gives a mean equal to its loss.
struct EvalResult {
  double mean = 0;
  std::vector<std::string> names;   // data.val sources' display names (blend_source_names)
  std::vector<double> per_source;
};

struct StepResult {
  int64_t step = 0;  // 1-based number of the step just taken
  double loss = 0;
  double grad_norm = 0;
  double lr = 0;
  StepTimes times;
};

// Wall time of the constructor, and of the parameters' initialisation (random or from a file).
struct StartupSeconds {
  double total = 0;
  double params = 0;
  double params_cpu = 0;  // CPU time of all threads during the initialisation (its wall time on a
                          // busy machine is no measure of the work)
};

struct RankMemory {
  MemoryFigures params;
  ActivationMemory activations;
  int64_t total() const {
    return params.params + params.master + params.grads + params.optimizer + params.comm + activations.total();
  }
};

// How generation computes each token's logits: kv_cache runs only the new tokens against a
// cache of the earlier ones' keys and values (GptDecoder); full_window reruns the model over
// the whole window of the last train.seq_len tokens for every token (the reference the cache
// is tested against).
enum class Decoding : uint8_t { kv_cache, full_window };
inline constexpr EnumName<Decoding> kDecodingNames[] = {{Decoding::kv_cache, "cache"},
                                                        {Decoding::full_window, "window"}};

struct GenerateOptions {
  int tokens = 1;             // new tokens
  float temperature = 1.0f;   // 0 = greedy
  int top_k = 40;             // 0 = the whole vocabulary
  uint64_t seed = 1;
  Decoding decoding = Decoding::kv_cache;
  // Called on the last pipeline stage's ranks with each new token's logits (over the real
  // vocabulary) before it is chosen; may be empty.
  std::function<void(const std::vector<float>& logits)> on_logits;
};

// What kind of data a run needs: training reads data.train (and data.val when evaluation is
// on); bench may run without data on random tokens.
enum class DataNeed : uint8_t { train, none };
// on: every Backend op is timed (OpProfiler) for `trainer bench --profile`.
enum class OpProfile : uint8_t { off, on };

class Trainer {
 public:
  // world: the host (MPI) world of this job; local_rank picks the GPU on a node.
  Trainer(const Recipe& recipe, Comm& world, int local_rank, DataNeed data = DataNeed::train,
          OpProfile profile = OpProfile::off);
  ~Trainer();

  // One optimizer step: compute_step() then apply_step().
  StepResult train_step();
  // The next step's forward and backward passes, gradient norm and loss (result.step is the
  // step's number); nothing is updated and step() is unchanged. Follow it by exactly one of
  // apply_step() and skip_step(), or by reloading a checkpoint (a rollback).
  StepResult compute_step();
  // AdamW update with the computed gradients; step() advances. Adds the optimizer's time.
  void apply_step(StepResult& computed);
  // The computed step is counted (step() advances, the learning rate schedule moves on) but
  // the weights and optimizer state stay as they were.
  void skip_step(StepResult& computed);
  // Mean validation loss over eval.batches batches from the start of each data.val source.
  EvalResult evaluate();
  // Continues `prompt_ids` by o.tokens tokens; identical on every rank (generate.cpp).
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt_ids, const GenerateOptions& o);
  // The logits of every position of `tokens` (1 to train.seq_len of them, one sequence) over
  // the real vocabulary, from one full forward (generate.cpp); on the last pipeline stage's
  // ranks, empty elsewhere. Collective, like generate.
  std::vector<std::vector<float>> forward_logits(const std::vector<int32_t>& tokens);

  int64_t step() const { return step_; }
  // Synchronise the device after each forward and backward so their times are exact (bench);
  // off in training, where it would cost overlap.
  void set_sync_timing(bool on) { sync_timing_ = on; }
  void set_step(int64_t step) { step_ = step; }
  const Recipe& recipe() const { return recipe_; }
  const GptConfig& config() const { return config_; }
  ProcessGrid& grid() { return *grid_; }
  Comm& host_world() { return world_; }
  Backend& backend() { return *backend_; }
  // The timeline recorder when log.trace is set, else null.
  TraceRecorder* tracer() { return trace_ ? &trace_->recorder() : nullptr; }
  // After a step and what follows it (evaluation, sampling, saves): ends the trace after its
  // last step. Collective, like finish_trace(), which ends it now (the run stops).
  void trace_after_step() {
    if (trace_) trace_->after_step(step_);
  }
  void finish_trace() {
    if (trace_) trace_->finish();
  }
  // The op timer when constructed with OpProfile::on, else null.
  OpProfiler* profiler() { return profiler_.get(); }
  ParamStore& store() { return *store_; }
  const StageLayout& layout() const { return *layout_; }
  DataLoader* train_loader() { return train_loader_.get(); }
  // What a checkpoint saves and restores of this rank (the step travels apart).
  CkptParts checkpoint_parts() {
    return CkptParts{world_, *layout_, *store_, train_loader_.get(), recipe_.checkpoint, run_manifest_};
  }
  RankMemory memory() const;
  const StartupSeconds& startup_seconds() const { return startup_; }
  int64_t tokens_per_step() const;
  // Global rank of (pipeline stage, data 0, tensor 0): where a stage's results are read.
  int stage_leader(int pp_rank) const;
  // train.graphs: step's runner (eager runs, captures, replays so far), else null.
  const StepGraphRunner* step_graphs() const { return graphs_.get(); }

 private:
  // The "step N" span of the trace, from compute_step's start to now.
  void trace_step_span(const StepResult& r, const char* outcome);
  // compute_step's passes under train.graphs: step: per micro-batch, its tokens, then its
  // captured forward and backward (the time is all forward_s).
  StepPassTimes run_graph_passes(const std::vector<std::vector<int32_t>>& inputs,
                                 const std::vector<std::vector<int32_t>>& targets, PassTiming timing);
  void run_forward_only(int n_micro, const std::vector<std::vector<int32_t>>& inputs,
                        const std::vector<std::vector<int32_t>>& targets, StageMode mode);

  Recipe recipe_;
  Comm& world_;
  int local_rank_;
  GptConfig config_;
  CkptManifest run_manifest_;  // the run as a checkpoint describes it (manifest_from)
  StepOptions step_opts_;      // what a step and an evaluation read (step_options_from)
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<OpProfiler> profiler_;  // attached to backend_, so declared after it
  // Times the pipeline's waits on the device (backend_'s; null with one stage): on a GPU a wait
  // only queues a stream wait, so the host's clock would read no bubble.
  std::unique_ptr<EventTimer> pipeline_timer_;
  // log.trace: the session (its recorder outlives the traced communicators below; its device
  // timer is backend_'s, so declared after it) and the traced view of the host world (host_
  // points to it, else to world_).
  std::unique_ptr<TraceSession> trace_;
  std::unique_ptr<Comm> traced_host_;
  Comm* host_ = nullptr;
  double step_start_us_ = 0;
  // make_device_comm: LocalComm for a world of one, NCCL on GPUs, null on CPU ranks (the MPI
  // world serves).
  std::unique_ptr<Comm> device_world_;
  std::unique_ptr<Comm> traced_device_world_;  // the TracingComm over the device (or host) world
  std::unique_ptr<ProcessGrid> grid_;
  std::unique_ptr<RankModel> rank_;
  // rank_'s parts, for short calls.
  const StageLayout* layout_ = nullptr;
  ParamStore* store_ = nullptr;
  GptStage* stage_ = nullptr;
  std::unique_ptr<DataLoader> train_loader_;
  std::vector<DataLoader> val_loaders_;  // one per data.val source
  LrSchedule lr_schedule_;
  int n_slots_ = 1;
  int64_t step_ = 0;
  bool sync_timing_ = false;
  StartupSeconds startup_;
  // Its graphs name the stage's, store's and backend's memory: declared last, destroyed first.
  std::unique_ptr<StepGraphRunner> graphs_;
};

}  // namespace trainer
