// Trainer implementation (see trainer.h).
#include "app/engine/trainer.h"

#include "app/hf/hf_folder.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "app/engine/memory_fit.h"
#include "app/engine/metrics.h"
#include "app/engine/options_from.h"
#include "app/engine/step_graphs.h"
#include "app/plan/rank_options.h"
#include "model/step_passes.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "data/file_glob.h"
#include "model/llmc_file.h"
#include "model/rng.h"
#include "parallel/device_comm.h"
#include "parallel/pipeline_executor.h"
#include "parallel/tracing_comm.h"

namespace trainer {
namespace {

// Runs `open` (a data loader over the recipe's `key`) so that a shard problem names the recipe
// and the key, and a missing shard also says how shards are made.
template <class Open>
void open_recipe_data(const Recipe& r, const std::string& key, Open&& open) {
  try {
    open();
  } catch (const NoFileError& e) {
    throw NoFileError(fmt::format("{}: {}: {} (token shards are made by `trainer data prepare --input TEXT "
                                  "--tokenizer NAME --out FOLDER`; see the README's Data section)",
                                  r.path, key, e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}: {}", r.path, key, e.what()));
  }
}

}  // namespace

Trainer::Trainer(const Recipe& recipe, Comm& world, int local_rank, DataNeed data, OpProfile profile)
    : recipe_(recipe), world_(world), local_rank_(local_rank), config_(gpt_config_from(recipe)), run_manifest_(manifest_from(recipe)),
      step_opts_(step_options_from(recipe)) {
  const double t_begin = monotonic_seconds();
  check_layout(recipe_, world_.size());
  const ParallelConfig& par = recipe_.parallel;
  const TrainConfig& tr = recipe_.train;

  backend_ = make_backend(backend_options_from(recipe_, local_rank_));
  if (profile == OpProfile::on) profiler_ = std::make_unique<OpProfiler>(*backend_);
  // On GPUs every device-side collective goes through NCCL (none for a world of one); host
  // scalars stay on MPI.
  device_world_ = make_device_comm(world_, *backend_, par.timeout_s);

  Comm* dev_world = device_world_ ? device_world_.get() : &world_;
  host_ = &world_;
  if (!recipe_.log.trace.empty()) {
    // Every group made from the traced worlds is traced (TracingComm::split).
    trace_ = std::make_unique<TraceSession>(recipe_.log, world_);
    traced_host_ = std::make_unique<TracingComm>(world_, world_, trace_->recorder());
    traced_device_world_ = std::make_unique<TracingComm>(*dev_world, world_, trace_->recorder());
    host_ = traced_host_.get();
    dev_world = traced_device_world_.get();
  }
  grid_ = std::make_unique<ProcessGrid>(*dev_world, par, par.interleaved() ? PipelineLinks::ring : PipelineLinks::chain);
  const GridCoords& c = grid_->coords();
  if (trace_) {
    trace_->name_rank(c);
    trace_->attach_device(*backend_);
  }
  if (par.pipelined()) {
    // NCCL opens point-to-point connections lazily and blocks until both ends arrive; the
    // schedules' first messages would not meet (see connect_pipeline).
    Buffer scratch = backend_->alloc(2 * sizeof(float));
    backend_->memset_zero(scratch.data(), scratch.bytes());
    Tensor two = scratch.tensor(DType::f32, {2});
    connect_pipeline(grid_->pipeline_comms(), c.pp, par.pipeline, two.flat(0, 1), two.flat(1, 2));
    backend_->synchronize();
    pipeline_timer_ = backend_->make_event_timer();
  }

  check_memory_fits(recipe_, config_, c, *backend_, world_);
  // The rank's objects, built as the planner's dry run builds them (app/plan/rank_options.h).
  RankOptions options = rank_options(plan_layout_from(recipe_, backend_->device()), c);
  document_boundary_from(recipe_, &options.stage.documents);
  n_slots_ = options.stage.n_slots;
  const RankComms comms{grid_->dp(), par.tensor_parallel() ? &grid_->tp() : nullptr, grid_->embed()};
  rank_ = std::make_unique<RankModel>(config_, options, *backend_, comms, [&](ParamStore& store) {
    const double t_params = monotonic_seconds(), cpu_params = process_cpu_seconds();
    if (recipe_.model.init_from.empty())
      store.init_random(tr.seed);
    else if (is_hf_folder(recipe_.model.init_from) || config_.family().llmc == LlmcFiles::unsupported)
      load_hf_into(store, recipe_.model.init_from, recipe_.path);
    else
      load_llmc_into(store, recipe_.model.init_from, recipe_.path);
    startup_.params = monotonic_seconds() - t_params;
    startup_.params_cpu = process_cpu_seconds() - cpu_params;
  });
  layout_ = &rank_->layout();
  store_ = &rank_->store();
  stage_ = &rank_->stage();

  lr_schedule_ = lr_schedule_from(recipe_);
  if (tr.graphs == StepGraphs::step) {
    // recipe_checks.cpp allows graphs only where nothing but this rank's ops runs in the passes.
    TRAINER_CHECK(world_.size() == 1 && !zero_policy(par.zero).shard_gradients(), "train.graphs: step in a layout the recipe checks refuse");
    if (profiler_)
      throw ConfigError(recipe_.path + ": train.graphs: step replays each micro-batch as one graph, so its ops "
                        "cannot be timed one by one (--profile); valid: --set train.graphs=off with --profile");
    graphs_ = std::make_unique<StepGraphRunner>(*stage_, *store_, *backend_);
  }

  if (data == DataNeed::train) {
    open_recipe_data(recipe_, recipe_.data.stages.empty() ? "data.train" : "data.train or data.stages",
                     [&] { train_loader_ = std::make_unique<DataLoader>(train_loader_options_from(recipe_, c)); });
    if (recipe_.eval.every > 0) {
      if (recipe_.data.val.empty())
        throw ConfigError(recipe_.path + ": eval.every is " + std::to_string(recipe_.eval.every) +
                          " but data.val is empty; set data.val or eval.every: 0");
      for (const LoaderOptions& o : val_loader_options_from(recipe_, c))
        open_recipe_data(recipe_, "data.val", [&] { val_loaders_.emplace_back(o); });
    }
  }
  startup_.total = monotonic_seconds() - t_begin;
}

Trainer::~Trainer() = default;

int64_t Trainer::tokens_per_step() const {
  return int64_t(recipe_.train.global_batch) * int64_t(recipe_.train.seq_len);
}

int Trainer::stage_leader(int pp_rank) const {
  return grid_->dims().rank_of(GridCoords{0, 0, pp_rank});
}

StepResult Trainer::train_step() {
  StepResult r = compute_step();
  apply_step(r);
  return r;
}

StepResult Trainer::compute_step() {
  if (trace_) trace_->begin_step(step_ + 1);
  TraceRecorder* trace = tracer();
  if (trace) step_start_us_ = trace->now_us();
  const double t_start = monotonic_seconds();
  const int m = step_opts_.grad_accum;
  const int64_t BT = int64_t(step_opts_.micro_batch) * step_opts_.seq_len;
  std::vector<std::vector<int32_t>> in(m, std::vector<int32_t>(BT)), tg(m, std::vector<int32_t>(BT));
  {
    TraceScope data_scope(trace, "data", "data", {TraceArg::num("micro_batches", m)});
    for (int i = 0; i < m; ++i) {
      if (train_loader_) {
        if (i == 0) train_loader_->set_step(step_ + 1);
        train_loader_->next(in[i].data(), tg[i].data());
      } else {
        // Bench without data: tokens from the counter-based generator.
        for (int64_t k = 0; k < BT; ++k) {
          auto r = philox4x32(step_opts_.seed, uint64_t(step_), uint64_t(i) * uint64_t(BT) + uint64_t(k));
          in[i][k] = int32_t(r[0] % uint32_t(config_.vocab_size));
          tg[i][k] = int32_t(r[1] % uint32_t(config_.vocab_size));
        }
      }
    }
  }

  store_->zero_grads();
  const PipelineSeat seat{step_opts_.schedule, grid_->coords().pp, layout_->dims(), n_slots_,
                          grid_->pipeline_comms(), trace, pipeline_timer_.get()};
  const PassTiming timing = sync_timing_ ? PassTiming::per_pass : PassTiming::overlapped;
  const StepPassTimes pt = graphs_ ? run_graph_passes(in, tg, timing)
                                   : run_step_passes(*stage_, *store_, *backend_, seat, in, tg, timing);
  // The last bucket's all-reduce is queued before the host waits for the device (on NCCL it
  // then starts as soon as the backward's last kernel ends).
  store_->flush_grads();
  backend_->synchronize();
  const double t_compute = monotonic_seconds();
  const double wait_s = total_wait_s(pt.waits, pipeline_timer_.get());
  if (pipeline_timer_) pipeline_timer_->reset();

  float sums[2];
  {
    TraceScope sync_scope(trace, "grad_sync", "sync");
    store_->finish_grads();
    const bool loss_owner = grid_->last_stage() && grid_->coords().tp == 0;
    const double loss_sum = stage_->take_loss_sum();
    sums[0] = float(store_->grad_sq_norm());
    sums[1] = loss_owner ? float(loss_sum) : 0.0f;
    host_->all_reduce(make_tensor(sums, DType::f32, Device::cpu, {2}), ReduceOp::sum);
  }
  const double t_sync = monotonic_seconds();

  StepResult r;
  r.grad_norm = std::sqrt(double(sums[0]));
  r.loss = double(sums[1]) / double(tokens_per_step());
  r.lr = lr_at(lr_schedule_, step_);
  r.step = step_ + 1;
  r.times.total_s = t_sync - t_start;
  r.times.pipeline_wait_s = wait_s;
  r.times.compute_s = (t_compute - t_start) - wait_s;
  r.times.forward_s = pt.forward_s;
  r.times.backward_s = pt.backward_s;
  r.times.grad_sync_s = t_sync - t_compute;
  return r;
}

StepPassTimes Trainer::run_graph_passes(const std::vector<std::vector<int32_t>>& inputs,
                                        const std::vector<std::vector<int32_t>>& targets, PassTiming timing) {
  StepPassTimes times;
  const int m = int(inputs.size());
  for (int i = 0; i < m; ++i) {
    TraceScope span(tracer(), "forward+backward", "compute", {TraceArg::num("micro", i)});
    const double t0 = monotonic_seconds();
    stage_->set_batch(i, 0, inputs[size_t(i)].data(), targets[size_t(i)].data());
    graphs_->run_micro(i, m);
    if (timing == PassTiming::per_pass) backend_->synchronize();
    times.forward_s += monotonic_seconds() - t0;
  }
  return times;
}

void Trainer::apply_step(StepResult& r) {
  TRAINER_CHECK(r.step == step_ + 1, "apply_step: the result of step " + std::to_string(r.step) + " at step " +
                                         std::to_string(step_));
  const double t0 = monotonic_seconds();
  {
    TraceScope optimizer_scope(tracer(), "optimizer", "optimizer");
    store_->optimizer_step(adamw_step(step_opts_, r.lr, r.grad_norm, step_ + 1));
    backend_->synchronize();
  }
  r.times.optimizer_s = monotonic_seconds() - t0;
  r.times.total_s += r.times.optimizer_s;
  step_ += 1;
  trace_step_span(r, "applied");
}

void Trainer::trace_step_span(const StepResult& r, const char* outcome) {
  if (TraceRecorder* trace = tracer())
    trace->complete("step " + std::to_string(r.step), "step", TraceRecorder::kMainThread, step_start_us_,
                    trace->now_us(),
                    {TraceArg::num("step", double(r.step)), TraceArg::num("loss", r.loss),
                     TraceArg::num("grad_norm", r.grad_norm), TraceArg::num("bubble_s", r.times.pipeline_wait_s),
                     TraceArg::str("update", outcome)});
}

void Trainer::skip_step(StepResult& r) {
  TRAINER_CHECK(r.step == step_ + 1, "skip_step: the result of step " + std::to_string(r.step) + " at step " +
                                         std::to_string(step_));
  step_ += 1;
  trace_step_span(r, "skipped");
}

void Trainer::run_forward_only(int n_micro, const std::vector<std::vector<int32_t>>& inputs,
                               const std::vector<std::vector<int32_t>>& targets, StageMode mode) {
  const ParallelDims& dims = layout_->dims();
  const int pp_rank = grid_->coords().pp;
  PipelineHooks hooks;
  hooks.forward = [&](int i, int c) {
    stage_->set_batch(i, c, inputs[i].data(), targets[i].data());
    stage_->forward(i, c, mode);
  };
  hooks.recv_act_buffer = [&](int i, int c) { return stage_->recv_act_buffer(i, c); };
  hooks.send_act_buffer = [&](int i, int c) { return stage_->send_act_buffer(i, c); };
  run_pipeline(make_forward_schedule(pp_rank, dims.pipeline, n_micro, dims.virtual_stages), grid_->pipeline_comms(),
               pp_rank, n_micro, n_slots_, hooks);
  backend_->synchronize();
}

EvalResult Trainer::evaluate() {
  TRAINER_CHECK(!val_loaders_.empty(), "evaluate without validation data");
  TraceScope eval_scope(tracer(), "eval", "eval");
  const int m = step_opts_.eval_micro_batches;
  const int64_t BT = int64_t(step_opts_.micro_batch) * step_opts_.seq_len;
  std::vector<std::vector<int32_t>> in(m, std::vector<int32_t>(BT)), tg(m, std::vector<int32_t>(BT));
  const bool loss_owner = grid_->last_stage() && grid_->coords().tp == 0;
  EvalResult result;
  result.names = step_opts_.val_names;
  double weight_sum = 0;
  for (size_t k = 0; k < val_loaders_.size(); ++k) {
    DataLoader& loader = val_loaders_[k];
    loader.reset();
    for (int i = 0; i < m; ++i) loader.next(in[i].data(), tg[i].data());
    stage_->take_loss_sum();
    run_forward_only(m, in, tg, StageMode::eval);
    float sum = loss_owner ? float(stage_->take_loss_sum()) : 0.0f;
    stage_->take_loss_sum();
    host_->all_reduce(make_tensor(&sum, DType::f32, Device::cpu, {1}), ReduceOp::sum);
    const double loss = double(sum) / (double(step_opts_.eval_batches) * double(BT));
    result.per_source.push_back(loss);
    const double w = step_opts_.val_weights[k];
    result.mean += w * loss;
    weight_sum += w;
  }
  result.mean /= weight_sum;
  return result;
}

RankMemory Trainer::memory() const { return RankMemory{store_->memory(), stage_->activation_memory()}; }

}  // namespace trainer
