// The dry run behind the memory plan (see plan_dry_run.h).
#include "app/plan/plan_dry_run.h"

#include <algorithm>
#include <memory>

#include "app/engine/step_passes.h"
#include "kernels/base/check.h"
#include "kernels/meta_backend.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/dry_comm.h"

namespace trainer {

namespace {

// libnbc's temporary host buffers (plan_memory.h): an in-place all-reduce holds one copy of the
// message, a binomial reduce-scatter one (two on the group's root beyond 2 ranks). Applied to
// the data group and the tied embedding's pair, whose gradient reductions are what counts.
int64_t libnbc_temp_bytes(CommCall call, int64_t in_bytes, int group_size) {
  if (group_size == 1) return 0;
  if (call == CommCall::all_reduce) return in_bytes;
  if (call == CommCall::reduce_scatter) return (group_size == 2 ? 1 : 2) * in_bytes;
  return 0;
}

StageOptions stage_options(const PlanLayout& l, int n_slots, Recompute recompute) {
  StageOptions o;
  o.micro_batch = l.micro_batch;
  o.seq_len = l.seq_len;
  o.n_slots = n_slots;
  o.recompute = recompute;
  o.sequence_parallel = l.sequence_parallel ? SeqParallel::on : SeqParallel::off;
  o.dloss = float(1.0 / (double(l.global_batch) * double(l.seq_len)));
  // The split keeps the saved activations for W; the other recomputation modes' figures are
  // reported without it (the recipe refuses them with zero_bubble).
  if (l.pipeline > 1 && splits_backward(l.schedule) && recompute == Recompute::none)
    o.split = BackwardSplit::input_then_weight;
  return o;
}

}  // namespace

PlanRankMemory plan_rank_memory(const GptConfig& config, const PlanLayout& l, int pp_rank, int64_t act_bytes,
                                HostTransients host, PlanReplay replay) {
  LayoutOptions lo;
  lo.tp = l.tensor;
  lo.pp_rank = pp_rank;
  lo.pp = l.pipeline;
  lo.dp = l.data;
  lo.virtual_stages = l.pipeline > 1 ? l.virtual_stages : 1;
  lo.stage_layers = l.stage_layers;
  const StageLayout layout(config, lo);

  const bool cpu = host == HostTransients::cpu_path;
  MetaBackend meta(cpu ? Device::cpu : Device::cuda, plan_act_dtype(act_bytes));
  CommMeter meter;
  if (cpu) meter.temp_bytes = libnbc_temp_bytes;
  DryComm dp(0, l.data, "data", &meter);
  DryComm tp(0, l.tensor, "tensor");
  DryComm pp_act(pp_rank, l.pipeline, "pipeline"), pp_grad(pp_rank, l.pipeline, "pipeline");
  std::unique_ptr<DryComm> embed;
  if (l.pipeline > 1 && layout.config().tied() && (layout.has_embedding() || layout.has_head()))
    embed = std::make_unique<DryComm>(layout.has_embedding() ? 0 : 1, 2, "tied embedding", &meter);

  ParamStore store(layout, meta, dp, embed.get(), l.zero_policy(), l.bucket_mb);
  if (l.tensor > 1)
    store.set_tensor_partial_grads(&tp, l.sequence_parallel ? TpPartialGrads::all_replicated : TpPartialGrads::per_head);
  const int n_slots = plan_slots(l, pp_rank);
  Comm* tp_group = l.tensor > 1 ? &tp : nullptr;
  GptStage stage(layout, store, meta, tp_group, stage_options(l, n_slots, l.recompute));

  // One step, as Trainer::train_step takes it; the token values do not matter.
  const int m = replay == PlanReplay::full ? l.grad_accum()
                                           : plan_replay_shape(plan_pipe_shape(l), 2 * l.pipeline + 2).n_micro;
  const std::vector<std::vector<int32_t>> tokens(size_t(m), std::vector<int32_t>(size_t(l.micro_batch) * l.seq_len, 0));
  store.zero_grads();
  const PipelineSeat seat{l.schedule, pp_rank, l.pipeline, lo.virtual_stages, n_slots, &pp_act, &pp_grad};
  run_step_passes(stage, store, meta, seat, tokens, tokens, PassTiming::overlapped);
  store.finish_grads();
  store.grad_sq_norm();
  store.optimizer_step(AdamWStep{});

  PlanRankMemory r;
  r.pp_rank = pp_rank;
  r.n_layers = layout.n_layers();
  r.param_elements = layout.total();
  const MemoryFigures f = store.memory();
  r.store = StoreMemory{f.params, f.master, f.grads, f.optimizer};
  r.staging = f.comm;
  r.acts = stage.activation_memory();
  TRAINER_CHECK(r.total() == int64_t(meta.allocated_bytes()),
                "plan: the dry run's figures (" + std::to_string(r.total()) + " bytes) miss some of what it allocated (" +
                    std::to_string(meta.allocated_bytes()) + ")");
  if (cpu) {
    int64_t largest = 0;
    for (const LocalParam& p : layout.params()) largest = std::max(largest, p.numel);
    r.init_transient = std::min(largest, ParamStore::kInitChunkElements) * 4;
    r.reduction_transient = meter.peak;
  }
  const Recompute modes[3] = {Recompute::none, Recompute::gelu, Recompute::block};
  for (int i = 0; i < 3; ++i) {
    if (modes[i] == l.recompute) {
      r.acts_by_recompute[i] = r.acts.activations();
    } else {
      const GptStage other(layout, store, meta, tp_group, stage_options(l, n_slots, modes[i]));
      r.acts_by_recompute[i] = other.activation_memory().activations();
    }
  }
  return r;
}

}  // namespace trainer
