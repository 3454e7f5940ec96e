// The search's closed forms (see plan_closed_form.h). StagingPool replays ParamStore's pool in
// the order GptStage calls acquire/release/grads/grads_done (model/param_store.cpp,
// model/gpt_stage.cpp); test_plan_memory.cpp compares it with the dry run, which runs those
// calls themselves.
#include "app/plan/plan_closed_form.h"

#include <algorithm>
#include <deque>
#include <numeric>

#include "app/plan/plan_activation.h"
#include "kernels/tensor.h"
#include "model/param_store.h"
#include "model/param_table.h"
#include "parallel/shard.h"

namespace trainer {

int64_t PlanUnits::total() const { return std::accumulate(padded.begin(), padded.end(), int64_t(0)); }
int64_t PlanUnits::shard_total() const { return total() / dims.data; }
int64_t PlanUnits::max_padded() const {
  return padded.empty() ? 0 : *std::max_element(padded.begin(), padded.end());
}

PlanUnits plan_units_closed_form(const GptConfig& c, const ParallelDims& dims, int pp_rank,
                                 const std::vector<int>& stage_layers) {
  const int tp = dims.tensor, dp = dims.data, pp = dims.pipeline, virtual_stages = dims.virtual_stages;
  const int64_t C = c.d_model;
  const int64_t wte = int64_t(c.padded_vocab) / tp * C, wpe = c.has_position_table() ? int64_t(c.max_seq_len) * C : 0;
  // A block's parameters on this tensor rank, from the family's table.
  const LayerParamsLocal layer = layer_params_local(c, tp);
  const int64_t block = layer.elements;
  const int64_t lnf = c.final_norm_params();
  PlanUnits u;
  u.dims = dims;
  u.tied = c.tied();
  u.first = dims.first_stage(pp_rank);
  u.last = dims.last_stage(pp_rank);
  const int n_virtual = pp * virtual_stages;
  for (int k = 0; k < virtual_stages; ++k) {
    const int vs = k * pp + pp_rank;
    const int layers = stage_layers.empty() ? c.n_layer / n_virtual + (vs < c.n_layer % n_virtual ? 1 : 0)
                                            : stage_layers[size_t(vs)];
    u.chunk_layers.push_back(layers);
    u.n_layers += layers;
  }
  auto add = [&](int64_t numel) {
    u.padded.push_back(unit_padded(numel, dp));
    return int(u.padded.size()) - 1;
  };
  if (u.first) {
    u.unit_wte = add(wte);
    if (c.has_position_table()) u.unit_wpe = add(wpe);
  }
  u.unit_first_block = u.n_layers > 0 ? int(u.padded.size()) : -1;
  for (int l = 0; l < u.n_layers; ++l) add(block);
  if (u.last) {
    u.unit_lnf = add(lnf);
    u.unit_head_wte = u.first && u.tied ? u.unit_wte : add(wte);
  }
  // The vocabulary table, the position table, a block's largest matrix, the final norm's C.
  if (u.first || u.last) u.max_param = std::max(u.max_param, wte);
  if (u.first) u.max_param = std::max(u.max_param, wpe);
  if (u.n_layers > 0) u.max_param = std::max(u.max_param, layer.largest);
  if (u.last) u.max_param = std::max(u.max_param, C);
  return u;
}

StoreMemory plan_store_memory(const PlanUnits& u, ZeroPolicy zero, int64_t act_bytes) {
  const int64_t total = u.total(), shard = u.shard_total();
  const DType act = plan_act_dtype(act_bytes);
  StoreMemory m;
  if (!zero.shard_parameters()) m.params = total * act_bytes;
  // Sharded f32 parameters are the master shard itself.
  if (zero.shard_parameters() && act != DType::f32) m.params = shard * act_bytes;
  switch (zero.master_weights(act)) {
    case MasterWeights::compute_copy: break;
    case MasterWeights::full_copy: m.master = total * 4; break;
    case MasterWeights::own_shard: m.master = shard * 4; break;
  }
  m.grads = (zero.shard_gradients() ? shard : total) * 4;
  m.optimizer = 2 * (zero.shard_optimizer_state() ? shard : total) * 4;
  return m;
}

namespace {

// Bytes per element of the data group's gradient reductions.
int64_t wire_bytes(const PlanUnits& u, DType reduce) { return reduces_in_bf16(reduce, u.dims.data) ? 2 : 4; }

// ParamStore's staging pool and the calls that use it, for one rank.
class StagingPool {
 public:
  StagingPool(const PlanUnits& u, ZeroPolicy zero, int64_t act_bytes, DType reduce)
      : u_(u),
        gather_(zero.param_gather() == ParamGather::per_unit),
        scatter_(zero.grad_reduction() == GradReduction::per_unit_reduce_scatter),
        act_(act_bytes),
        wire_(wire_bytes(u, reduce)),
        refs_(u.padded.size(), 0),
        temp_(u.padded.size(), 0) {}

  void acquire(int unit) {
    if (!gather_) return;
    if (refs_[size_t(unit)]++ == 0) take(u_.padded[size_t(unit)] * act_);
  }
  void release(int unit) {
    if (!gather_) return;
    if (--refs_[size_t(unit)] == 0) give(u_.padded[size_t(unit)] * act_);
  }
  void grads(int unit) {
    if (!scatter_ || temp_[size_t(unit)]) return;
    take(u_.padded[size_t(unit)] * 4);
    temp_[size_t(unit)] = 1;
  }
  // A unit's reduce-scatter: a shard-sized output, at most 2 in flight after each start. A bf16
  // wire takes the unit's bf16 copy and gives its f32 gradients back first.
  void grads_done(int unit) {
    if (!scatter_ || !temp_[size_t(unit)]) return;
    if (wire_ == 2) {
      take(u_.padded[size_t(unit)] * 2);
      give(u_.padded[size_t(unit)] * 4);
    }
    take(u_.padded[size_t(unit)] / u_.dims.data * wire_);
    temp_[size_t(unit)] = 0;
    pending_.push_back(unit);
    reducing_ += reduce_temp(unit);
    reducing_peak_ = std::max(reducing_peak_, reducing_);
    while (pending_.size() > 2) complete_oldest();
  }
  void finish() {
    while (!pending_.empty()) complete_oldest();
  }

  // GptStage::forward(train) and GptStage::backward of one chunk.
  void forward(int chunk) {
    const int v = int(u_.chunk_layers.size()), l0 = first_local(chunk);
    if (u_.first && chunk == 0) {
      acquire(u_.unit_wte);
      if (u_.unit_wpe >= 0) acquire(u_.unit_wpe);
      if (u_.unit_wpe >= 0) release(u_.unit_wpe);
      release(u_.unit_wte);
    }
    for (int l = l0; l < l0 + u_.chunk_layers[size_t(chunk)]; ++l) {
      acquire(u_.unit_first_block + l);
      release(u_.unit_first_block + l);
    }
    if (u_.last && chunk == v - 1) {
      acquire(u_.unit_lnf);
      acquire(u_.unit_head_wte);
      grads(u_.unit_head_wte);
      grads(u_.unit_lnf);
      release(u_.unit_head_wte);
      release(u_.unit_lnf);
    }
  }
  // split: zero_bubble's B, the blocks done in backward_weight.
  void backward(int chunk, BackwardSplit split) {
    const int v = int(u_.chunk_layers.size()), l0 = first_local(chunk);
    if (u_.last && chunk == v - 1) {
      grads_done(u_.unit_lnf);
      if (u_.unit_head_wte != u_.unit_wte) grads_done(u_.unit_head_wte);
    }
    for (int l = l0 + u_.chunk_layers[size_t(chunk)] - 1; l >= l0; --l) {
      const int unit = u_.unit_first_block + l;
      acquire(unit);
      grads(unit);
      release(unit);
      if (split == BackwardSplit::whole) grads_done(unit);
    }
    if (u_.first && chunk == 0) {
      grads(u_.unit_wte);
      if (u_.unit_wpe >= 0) grads(u_.unit_wpe);
      if (u_.unit_wpe >= 0) grads_done(u_.unit_wpe);
      grads_done(u_.unit_wte);
    }
  }

  void backward_weight(int chunk) {
    const int l0 = first_local(chunk);
    for (int l = l0 + u_.chunk_layers[size_t(chunk)] - 1; l >= l0; --l) {
      grads(u_.unit_first_block + l);
      grads_done(u_.unit_first_block + l);
    }
  }

  int64_t allocated() const { return allocated_; }
  // Peak of libnbc's reduce-scatter temporaries in flight (host transients, see the header).
  int64_t reducing_peak() const { return reducing_peak_; }

 private:
  int first_local(int chunk) const {
    int l0 = 0;
    for (int k = 0; k < chunk; ++k) l0 += u_.chunk_layers[size_t(k)];
    return l0;
  }
  void take(int64_t bytes) {
    for (auto& f : free_) {
      if (f.first == bytes && f.second > 0) {
        f.second -= 1;
        return;
      }
    }
    allocated_ += bytes;
  }
  void give(int64_t bytes) {
    for (auto& f : free_) {
      if (f.first == bytes) {
        f.second += 1;
        return;
      }
    }
    free_.push_back({bytes, 1});
  }
  void complete_oldest() {
    const int unit = pending_.front();
    pending_.pop_front();
    const int64_t shard = u_.padded[size_t(unit)] / u_.dims.data;
    if (wire_ == 2) {  // the bf16 shard is added through an f32 one
      take(shard * 4);
      give(shard * 4);
    }
    give(shard * wire_);
    give(u_.padded[size_t(unit)] * wire_);
    reducing_ -= reduce_temp(unit);
  }
  // The temporaries of a unit's reduce-scatter on the CPU path (libnbc_temp_bytes).
  int64_t reduce_temp(int unit) const {
    return libnbc_temp_bytes(CommCall::reduce_scatter, u_.padded[size_t(unit)] * wire_, u_.dims.data);
  }

  const PlanUnits& u_;
  bool gather_;   // units gathered per use (ParamGather::per_unit)
  bool scatter_;  // per-unit gradient staging and reduce-scatter
  int64_t act_;
  int64_t wire_;  // bytes per element of the gradient reductions (wire_bytes)
  std::vector<int> refs_;
  std::vector<char> temp_;
  std::deque<int> pending_;
  std::vector<std::pair<int64_t, int>> free_;  // (bytes, free buffers of that size)
  int64_t allocated_ = 0;
  int64_t reducing_ = 0, reducing_peak_ = 0;
};

// Replays one training step's ParamStore calls in the schedule's order (see
// plan_staging_peak).
StagingPool replay_step(const PlanUnits& u, ZeroPolicy zero, int64_t act_bytes, DType reduce, const PipeShape& shape,
                        int pp_rank) {
  StagingPool pool(u, zero, act_bytes, reduce);
  const BackwardSplit split =
      shape.n_stages > 1 && splits_backward(shape.schedule) ? BackwardSplit::input_then_weight : BackwardSplit::whole;
  for (const Action& a : make_schedule(plan_replay_shape(shape, 4), pp_rank)) {
    if (a.kind == ActionKind::forward) pool.forward(a.chunk);
    if (a.kind == ActionKind::backward) pool.backward(a.chunk, split);
    if (a.kind == ActionKind::backward_weight) pool.backward_weight(a.chunk);
  }
  pool.finish();
  return pool;
}

}  // namespace

int64_t plan_staging_peak(const PlanUnits& u, ZeroPolicy zero, int64_t act_bytes, DType reduce, const PipeShape& shape,
                          int pp_rank) {
  // Buckets reduce in the whole-gradient buffer itself, or in its bf16 copy.
  if (zero.bucketed()) return wire_bytes(u, reduce) == 2 ? u.total() * 2 : 0;
  return replay_step(u, zero, act_bytes, reduce, shape, pp_rank).allocated();
}

std::vector<int64_t> plan_buckets(const PlanUnits& u, double bucket_mb, BackwardSplit split) {
  const int64_t limit = std::max<int64_t>(1, int64_t(bucket_mb * 1024 * 1024));
  std::vector<int> order, blocks;
  if (u.last) {
    order.push_back(u.unit_lnf);
    if (u.unit_head_wte != u.unit_wte) order.push_back(u.unit_head_wte);
  }
  for (int l = u.n_layers - 1; l >= 0; --l) blocks.push_back(u.unit_first_block + l);
  if (split == BackwardSplit::whole) order.insert(order.end(), blocks.begin(), blocks.end());
  if (u.first) {
    if (u.unit_wpe >= 0) order.push_back(u.unit_wpe);
    order.push_back(u.unit_wte);
  }
  if (split == BackwardSplit::input_then_weight) order.insert(order.end(), blocks.begin(), blocks.end());
  std::vector<int64_t> buckets;
  int lo = -1, hi = -1;
  int64_t cur = 0;
  auto flush = [&] {
    if (lo < 0) return;
    int64_t bytes = 0;
    for (int x = lo; x <= hi; ++x) bytes += u.padded[size_t(x)] * 4;
    buckets.push_back(bytes);
    lo = hi = -1;
    cur = 0;
  };
  for (int unit : order) {
    if (lo >= 0 && unit != lo - 1 && unit != hi + 1) flush();
    lo = lo < 0 ? unit : std::min(lo, unit);
    hi = std::max(hi, unit);
    cur += u.padded[size_t(unit)] * 4;
    if (cur >= limit) flush();
  }
  flush();
  return buckets;
}

int64_t plan_reduction_transient(const PlanUnits& u, ZeroPolicy zero, int64_t act_bytes, DType reduce,
                                 const PipeShape& shape, int pp_rank, double bucket_mb) {
  int64_t grads = 0;
  const GradReduction reduction = zero.grad_reduction();
  if (u.dims.data_parallel() && reduction == GradReduction::bucketed_all_reduce) {
    // Two buckets in flight at most: the largest pair of consecutive ones.
    const BackwardSplit split =
        u.dims.pipelined() && splits_backward(shape.schedule) ? BackwardSplit::input_then_weight : BackwardSplit::whole;
    std::vector<int64_t> b = plan_buckets(u, bucket_mb, split);
    for (size_t i = 0; i < b.size(); ++i) grads = std::max(grads, b[i] + (i + 1 < b.size() ? b[i + 1] : 0));
    grads = grads / 4 * wire_bytes(u, reduce);  // the buckets are formed by their f32 size
  }
  if (u.dims.data_parallel() && reduction == GradReduction::per_unit_reduce_scatter)
    grads = replay_step(u, zero, act_bytes, reduce, shape, pp_rank).reducing_peak();
  // GradReduction::bucketed_reduce_scatter adds nothing: it is the GPU path's (bucket_reduce_on),
  // and NCCL reduces in the caller's buffers.
  // Then the tied embedding's all-reduce between the first and last stage (in place, 2 ranks).
  int64_t tied = 0;
  if (u.dims.pipelined() && u.tied && (u.first || u.last)) {
    const int64_t wte = u.padded[size_t(u.first ? u.unit_wte : u.unit_head_wte)];
    tied = (zero.reduced_on_shard_only() ? wte / u.dims.data : wte) * 4;
  }
  return std::max(grads, tied);
}

PlanRankMemory plan_rank_memory_closed_form(const GptConfig& c, const PlanLayout& l, int pp_rank, int64_t act_bytes,
                                            HostTransients host) {
  const PlanUnits u =
      plan_units_closed_form(c, l, pp_rank, l.stage_layers);
  PlanRankMemory r;
  r.pp_rank = pp_rank;
  r.n_layers = u.n_layers;
  r.param_elements = u.total();
  const ZeroPolicy zero = l.zero_policy();
  r.store = plan_store_memory(u, zero, act_bytes);
  r.staging = plan_staging_peak(u, zero, act_bytes, l.grad_reduce_dtype, plan_pipe_shape(l), pp_rank);
  if (host == HostTransients::cpu_path) {
    r.init_transient = std::min<int64_t>(u.max_param, ParamStore::kInitChunkElements) * 4;
    r.reduction_transient =
        plan_reduction_transient(u, zero, act_bytes, l.grad_reduce_dtype, plan_pipe_shape(l), pp_rank, l.bucket_mb);
  }
  ActivationDims d;
  d.micro_batch = l.micro_batch;
  d.seq_len = l.seq_len;
  d.model = c;
  d.tp = l.tensor;
  d.sequence_parallel = l.sequence_parallel;
  d.n_layers = u.n_layers;
  if (u.chunk_layers.size() > 1) d.chunk_layers = u.chunk_layers;
  d.first = u.first;
  d.last = u.last;
  d.act_bytes = act_bytes;
  const int64_t slots = plan_slots(l, pp_rank);
  const Recompute modes[3] = {Recompute::none, Recompute::gelu, Recompute::block};
  for (int i = 0; i < 3; ++i) {
    d.recompute = modes[i];
    d.stash_weight_grads = l.pipelined() && splits_backward(l.schedule) && modes[i] == Recompute::none;
    const ActivationMemory p = plan_activations(d, slots);
    r.acts_by_recompute[i] = p.activations();
    if (modes[i] == l.recompute) r.acts = p;
  }
  return r;
}

}  // namespace trainer
