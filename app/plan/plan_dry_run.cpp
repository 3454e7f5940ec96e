// The dry run behind the memory plan (see plan_dry_run.h).
#include "app/plan/plan_dry_run.h"

#include <algorithm>
#include <memory>

#include "app/plan/rank_options.h"
#include "model/step_passes.h"
#include "kernels/base/check.h"
#include "kernels/meta_backend.h"
#include "kernels/op_profiler.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/dry_comm.h"

namespace trainer {

namespace {

// Whether stage pp_rank holds the ring's wrap-around communicators (see ProcessGrid).
bool wrap_end(const PlanLayout& l, int pp_rank) {
  return l.interleaved() && l.end_stage(pp_rank);
}

// Stage pp_rank's rank at tensor and data rank 0, built as the trainer builds it (RankModel from
// rank_options), on a MetaBackend with DryComms for its groups.
struct DryRank {
  DryRank(const GptConfig& config, const PlanLayout& l, int stage_rank, int64_t act_bytes, HostTransients host)
      : plan(l),
        pp_rank(stage_rank),
        cpu(host == HostTransients::cpu_path),
        meta(cpu ? Device::cpu : Device::cuda, plan_act_dtype(act_bytes)),
        dp(0, l.data, "data", &meter),
        tp(0, l.tensor, "tensor"),
        pp_act(stage_rank, l.pipeline, "pipeline"),
        pp_grad(stage_rank, l.pipeline, "pipeline"),
        wrap_act(wrap_end(l, stage_rank) ? std::make_unique<DryComm>(stage_rank == 0 ? 0 : 1, 2, "pipeline wrap-around")
                                         : nullptr),
        wrap_grad(wrap_end(l, stage_rank)
                      ? std::make_unique<DryComm>(stage_rank == 0 ? 0 : 1, 2, "pipeline wrap-around (gradients)")
                      : nullptr),
        embed(l.end_stage(stage_rank) && config.tied()
                  ? std::make_unique<DryComm>(l.first_stage(stage_rank) ? 0 : 1, 2, "tied embedding", &meter)
                  : nullptr),
        rank(config, rank_options(l, GridCoords{0, 0, stage_rank}), meta,
             RankComms{dp, l.tensor_parallel() ? &tp : nullptr, embed.get()}),
        layout(rank.layout()),
        store(rank.store()),
        stage(rank.stage()),
        n_slots(rank.options().stage.n_slots) {
    // Applied to the data group and the tied embedding's pair, whose gradient reductions are
    // what counts.
    if (cpu) meter.temp_bytes = libnbc_temp_bytes;
  }

  // One step, as Trainer::train_step takes it; the token values do not matter.
  void step(PlanReplay replay) {
    const int m = replay == PlanReplay::full ? plan.grad_accum()
                                             : plan_replay_shape(plan_pipe_shape(plan), 2 * plan.pipeline + 2).n_micro;
    const std::vector<std::vector<int32_t>> tokens(size_t(m),
                                                   std::vector<int32_t>(size_t(plan.micro_batch) * plan.seq_len, 0));
    store.zero_grads();
    const PipelineSeat seat{plan.schedule, pp_rank, layout.dims(), n_slots,
                            PipelineComms{&pp_act, &pp_grad, wrap_act.get(), wrap_grad.get()}};
    run_step_passes(stage, store, meta, seat, tokens, tokens, PassTiming::overlapped);
    store.finish_grads();
    store.grad_sq_norm();
    store.optimizer_step(AdamWStep{});
  }

  const PlanLayout& plan;
  const int pp_rank;
  const bool cpu;
  MetaBackend meta;
  CommMeter meter;
  DryComm dp, tp, pp_act, pp_grad;
  std::unique_ptr<DryComm> wrap_act, wrap_grad;  // the ring's wrap-around link (ProcessGrid's)
  std::unique_ptr<DryComm> embed;
  RankModel rank;
  const StageLayout& layout;
  ParamStore& store;
  GptStage& stage;
  const int n_slots;
};

}  // namespace

PlanRankMemory plan_rank_memory(const GptConfig& config, const PlanLayout& l, int pp_rank, int64_t act_bytes,
                                HostTransients host, PlanReplay replay) {
  DryRank d(config, l, pp_rank, act_bytes, host);
  d.step(replay);
  const StageLayout& layout = d.layout;
  ParamStore& store = d.store;
  MetaBackend& meta = d.meta;

  PlanRankMemory r;
  r.pp_rank = pp_rank;
  r.n_layers = layout.n_layers();
  r.param_elements = layout.total();
  const MemoryFigures f = store.memory();
  r.store = StoreMemory{f.params, f.master, f.grads, f.optimizer};
  r.staging = f.comm;
  r.acts = d.stage.activation_memory();
  TRAINER_CHECK(r.total() == int64_t(meta.allocated_bytes()),
                "plan: the dry run's figures (" + std::to_string(r.total()) + " bytes) miss some of what it allocated (" +
                    std::to_string(meta.allocated_bytes()) + ")");
  if (d.cpu) {
    int64_t largest = 0;
    for (const LocalParam& p : layout.params()) largest = std::max(largest, p.numel);
    r.init_transient = std::min(largest, ParamStore::kInitChunkElements) * 4;
    r.reduction_transient = d.meter.peak;
  }
  const Recompute modes[3] = {Recompute::none, Recompute::gelu, Recompute::block};
  for (int i = 0; i < 3; ++i) {
    if (modes[i] == l.recompute) {
      r.acts_by_recompute[i] = r.acts.activations();
    } else {
      r.acts_by_recompute[i] = d.rank.other_stage(stage_options(l, pp_rank, modes[i]))->activation_memory().activations();
    }
  }
  return r;
}

std::vector<OpProfileRow> plan_step_ops(const GptConfig& config, const PlanLayout& layout, int pp_rank,
                                        int64_t act_bytes, HostTransients host) {
  DryRank d(config, layout, pp_rank, act_bytes, host);
  OpProfiler profiler(d.meta);
  d.step(PlanReplay::full);
  profiler.collect();
  return profiler.rows();
}

}  // namespace trainer
