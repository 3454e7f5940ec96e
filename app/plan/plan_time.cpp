// Step-time model (see plan_time.h for every assumption).
#include "app/plan/plan_time.h"

#include <algorithm>

#include "app/plan/flops.h"
#include "app/plan/plan_closed_form.h"

namespace trainer {

namespace {

struct Link {
  double bytes_per_s;
  double latency_s;
};

Link link_for(bool intra, const DeviceSpec& d) {
  return intra ? Link{d.intra_bytes_per_s, d.intra_latency_s} : Link{d.inter_bytes_per_s, d.inter_latency_s};
}

double all_reduce_s(double bytes, int n, Link l) {
  if (n <= 1) return 0;
  return 2.0 * (n - 1) / n * bytes / l.bytes_per_s + 2.0 * (n - 1) * l.latency_s;
}

// Reduce-scatter or all-gather of `bytes` (the whole buffer, before sharding).
double scatter_gather_s(double bytes, int n, Link l) {
  if (n <= 1) return 0;
  return double(n - 1) / n * bytes / l.bytes_per_s + double(n - 1) * l.latency_s;
}

double send_s(double bytes, Link l) { return bytes / l.bytes_per_s + l.latency_s; }

struct StageTime {
  int stage = 0;
  double fwd = 0, bwd = 0, tp = 0, p2p = 0;
  double flops = 0;  // per micro-batch, this rank, incl. recompute
  double micro() const { return fwd + bwd + tp + p2p; }
};

}  // namespace

double stage_flops_per_token(const GptConfig& c, int seq_len, int n_layers, bool last) {
  const double C = c.d_model;
  double f = 6.0 * n_layers * double(c.block_params()) + 6.0 * n_layers * double(seq_len) * C;
  if (last) f += 6.0 * (double(c.padded_vocab) * C + double(c.final_norm_params()));
  return f;
}

double stage_recompute_flops_per_token(const GptConfig& c, int seq_len, int n_layers) {
  const double C = c.d_model;
  return 2.0 * n_layers * double(c.block_params()) + 2.0 * n_layers * double(seq_len) * C;
}

bool pairs_within_node(int offset, int n_first, int ranks_per_node) {
  for (int r = 0; r < n_first; ++r)
    if (r / ranks_per_node != (r + offset) / ranks_per_node) return false;
  return true;
}

bool groups_within_node(int stride, int size, int world, int ranks_per_node) {
  if (size <= 1) return true;
  for (int r = 0; r < world; ++r) {
    if ((r / stride) % size != 0) continue;  // not the first member of its group
    if (r / ranks_per_node != (r + (size - 1) * stride) / ranks_per_node) return false;
  }
  return true;
}

StepEstimate estimate_step(const GptConfig& c, const PlanLayout& l, const DeviceSpec& dev, double peak,
                           int64_t act_bytes) {
  const int p = l.pipeline, t = l.tensor, d = l.data, world = l.world(), m = l.grad_accum();
  const double rate = dev.mfu * peak;
  const double tokens_micro = double(l.micro_batch) * l.seq_len;
  const double act_msg = tokens_micro * c.d_model * double(act_bytes);
  const Link tp_link = link_for(groups_within_node(1, t, world, dev.ranks_per_node), dev);
  const Link dp_link = link_for(groups_within_node(t, d, world, dev.ranks_per_node), dev);
  const int stage_stride = t * d;  // ranks between neighbouring pipeline stages
  const Link pp_link = link_for(pairs_within_node(stage_stride, world - stage_stride, dev.ranks_per_node), dev);
  const Link tied_link = link_for(pairs_within_node((p - 1) * stage_stride, stage_stride, dev.ranks_per_node), dev);
  const ZeroPolicy zero = l.zero_policy();

  // Even split (or the recipe's): stage 0 and stage 1 have the most layers, the last the head.
  const std::vector<int> stages = plan_sampled_stages(l);

  StepEstimate e;
  StageTime slowest;
  double dp_exposed = 0, optimizer = 0;
  for (int s : stages) {
    ParallelDims dims = l;
    dims.virtual_stages = l.chunks_per_rank();
    const PlanUnits u = plan_units_closed_form(c, dims, s, l.stage_layers);
    StageTime st;
    st.stage = s;
    const double f = stage_flops_per_token(c, l.seq_len, u.n_layers, u.last) * tokens_micro / t;
    const double r = l.recompute == Recompute::block
                         ? stage_recompute_flops_per_token(c, l.seq_len, u.n_layers) * tokens_micro / t
                         : 0.0;
    st.flops = f + r;
    st.fwd = f / 3.0 / rate;
    st.bwd = (2.0 * f / 3.0 + r) / rate;
    if (l.tensor_parallel()) {
      int n_ar = 4 * u.n_layers + (l.recompute == Recompute::block ? 2 * u.n_layers : 0);
      n_ar += (u.first ? 1 : 0) + (u.last ? 1 : 0);
      st.tp = n_ar * all_reduce_s(act_msg, t, tp_link);
      if (u.last) st.tp += all_reduce_s(tokens_micro * 4, t, tp_link) + all_reduce_s(tokens_micro * 8, t, tp_link);
    }
    if (l.pipelined()) {
      // Per chunk: receive activations, send gradients (not at virtual stage 0), send
      // activations, receive gradients (not at the last); the first and last stage's later
      // chunks talk to each other round the ring.
      const int v = int(u.chunk_layers.size());
      const int wrap = v > 1 && (u.first || u.last) ? 2 * (v - 1) : 0;
      const int msgs = 4 * v - (u.first ? 2 : 0) - (u.last ? 2 : 0);
      st.p2p = (msgs - wrap) * send_s(act_msg, pp_link);
      if (wrap > 0) st.p2p += wrap * send_s(act_msg, tied_link);
    }
    if (st.micro() > slowest.micro()) slowest = st;

    // Data-parallel communication of this stage's ranks after (or behind) their backward.
    const double P = double(u.total());
    const bool bf16_wire = l.reduces_in_bf16();
    const double grads = P * (bf16_wire ? 2.0 : 4.0), params = P * double(act_bytes);
    double exposed = 0;
    // The conditions are asked inline, one `if` per case, rather than held in named bools: the
    // compiler's choice of fused multiply-adds depends on the shape of this code, and `trainer
    // plan` reports (and the ranking of near ties) are kept bit-identical across refactors.
    if (zero.grad_reduction() == GradReduction::bucketed_all_reduce)
      exposed = std::max(0.0, all_reduce_s(grads, d, dp_link) - st.bwd);
    if (zero.grad_reduction() == GradReduction::bucketed_reduce_scatter)
      exposed = std::max(0.0, scatter_gather_s(grads, d, dp_link) - st.bwd);
    if (zero.grad_reduction() == GradReduction::per_unit_reduce_scatter && zero.param_gather() != ParamGather::per_unit)
      exposed = m * std::max(0.0, scatter_gather_s(grads, d, dp_link) - st.bwd);
    if (zero.param_gather() == ParamGather::per_unit)
      exposed = m * (2 * scatter_gather_s(params, d, dp_link) + std::max(0.0, scatter_gather_s(grads, d, dp_link) - st.bwd));
    // ZeRO-1's all-gather after AdamW: on GPUs each unit's is waited for where the next step's
    // forward first needs it (GatherWait::on_first_use), so only what outlasts a micro-batch's
    // forward shows; on the CPU path it is waited for in the step.
    if (zero.param_gather() == ParamGather::after_step && dev.gpu)
      exposed += std::max(0.0, scatter_gather_s(params, d, dp_link) - st.fwd);
    if (zero.param_gather() == ParamGather::after_step && !dev.gpu) exposed += scatter_gather_s(params, d, dp_link);
    // A bf16 wire's casts run on the compute stream: 6 bytes an element into bf16 before each
    // reduction and 6 back into f32 for what this rank keeps (all of it after an all-reduce).
    if (bf16_wire) {
      const double back = zero.grad_reduction() == GradReduction::bucketed_all_reduce ? P : P / d;
      const int passes = zero.reduce_every_micro_batch() ? m : 1;
      exposed += passes * 6.0 * (P + back) / dev.hbm_bytes_per_s;
    }
    if (l.pipelined() && (u.first || u.last)) {
      const double wte = double(u.padded[size_t(u.first ? u.unit_wte : u.unit_head_wte)]);
      exposed += all_reduce_s((zero.reduced_on_shard_only() ? wte / d : wte) * 4, 2, tied_link);
    }
    dp_exposed = std::max(dp_exposed, exposed);
    const double owned = zero.shard_optimizer_state() ? P / d : P;
    const bool separate_copy = zero.master_weights(plan_act_dtype(act_bytes)) != MasterWeights::compute_copy;
    optimizer = std::max(optimizer, owned * (32.0 + (separate_copy ? double(act_bytes) : 0.0)) / dev.hbm_bytes_per_s);
  }

  e.slowest_stage = slowest.stage;
  e.forward_s = m * slowest.fwd;
  e.backward_s = m * slowest.bwd;
  e.tp_comm_s = m * slowest.tp;
  e.p2p_s = m * slowest.p2p;
  // A chunk's micro-batch time is 1/v of the stage's: the ramp of the interleaved schedule.
  e.bubble_s = (p - 1) * slowest.micro();
  if (l.pipelined() && l.interleaved()) e.bubble_s /= l.virtual_stages;
  // zero_bubble: the idle share of its unit-time pass, f of the step, is f / (1 - f) of the m
  // micro-batch times.
  if (l.pipelined() && l.schedule == Schedule::zero_bubble) {
    const double f = bubble_fraction(plan_pipe_shape(l));
    e.bubble_s = m * slowest.micro() * f / (1.0 - f);
  }
  e.dp_comm_s = dp_exposed;
  e.optimizer_s = optimizer;
  e.step_s = e.forward_s + e.backward_s + e.tp_comm_s + e.p2p_s + e.bubble_s + e.dp_comm_s + e.optimizer_s;
  const double tokens = double(l.global_batch) * l.seq_len;
  e.tokens_per_s = tokens / e.step_s;
  e.flops_per_step = flops_per_token(c, l.seq_len) * tokens;
  e.mfu = e.flops_per_step / (e.step_s * world * peak);
  e.rank_flops = m * slowest.flops;
  return e;
}

}  // namespace trainer
