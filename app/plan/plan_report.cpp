// Plan output (see plan_report.h).
#include "app/plan/plan_report.h"

#include <fmt/core.h>

#include <algorithm>

#include "app/plan/flops.h"
#include "kernels/base/format_bytes.h"
#include "app/plan/plan_dry_run.h"

namespace trainer {

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += fmt::format("\\u{:04x}", int(ch));
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

const char* dtype_label(int64_t act_bytes) { return act_bytes == 2 ? "bf16" : "fp32"; }

std::string layout_label(const PlanLayout& l) {
  return fmt::format("{}x{}x{}", l.data, l.tensor, l.pipeline);
}

// The search table's schedule column: "-" without stages, "int x2" for interleaved over 2
// virtual stages, "zbh1" for zero_bubble.
std::string schedule_label(const PlanLayout& l) {
  if (!l.pipelined()) return "-";
  if (l.schedule == Schedule::zero_bubble) return "zbh1";
  if (l.schedule == Schedule::interleaved) return fmt::format("int x{}", l.virtual_stages);
  return schedule_name(l.schedule);
}

std::string device_line(const PlanContext& c, int world) {
  return fmt::format("{} rank{} of {} ({} per rank, peak {:.4g} TFLOP/s, assumed MFU {:.0f}%)", world,
                     world == 1 ? "" : "s", plan_device_name(c.device.kind), format_bytes(c.memory_limit),
                     c.peak_flops / 1e12, 100.0 * c.device.mfu);
}

std::string time_line(const StepEstimate& e) {
  return fmt::format(
      "step {:.4g} s = forward {:.4g} + backward {:.4g} + tensor comm {:.4g} + pipeline p2p {:.4g} + bubble {:.4g} + "
      "exposed data comm {:.4g} + optimizer {:.4g}; {:.4g} tokens/s, MFU {:.1f}%",
      e.step_s, e.forward_s, e.backward_s, e.tp_comm_s, e.p2p_s, e.bubble_s, e.dp_comm_s, e.optimizer_s,
      e.tokens_per_s, 100.0 * e.mfu);
}

std::string time_json(const StepEstimate& e) {
  return fmt::format(
      "{{\"step_s\": {:.6g}, \"forward_s\": {:.6g}, \"backward_s\": {:.6g}, \"tp_comm_s\": {:.6g}, \"p2p_s\": {:.6g}, "
      "\"bubble_s\": {:.6g}, \"dp_comm_s\": {:.6g}, \"comm_s\": {:.6g}, \"optimizer_s\": {:.6g}, "
      "\"tokens_per_s\": {:.6g}, \"mfu\": {:.6g}}}",
      e.step_s, e.forward_s, e.backward_s, e.tp_comm_s, e.p2p_s, e.bubble_s, e.dp_comm_s, e.comm_s(), e.optimizer_s,
      e.tokens_per_s, e.mfu);
}

// Stage rows that only differ in their number collapse into one ("1-14").
bool same_row(const PlanRankMemory& a, const PlanRankMemory& b) {
  return a.n_layers == b.n_layers && a.acts.slots == b.acts.slots && a.total() == b.total() &&
         a.comm() == b.comm() && a.store.total() == b.store.total();
}

}  // namespace

int PlanReport::largest_stage() const {
  int best = 0;
  for (size_t s = 0; s < stages.size(); ++s)
    if (stages[s].peak() > stages[size_t(best)].peak()) best = int(s);
  return best;
}

int64_t PlanReport::attention_workspace() const {
  return plan_attention_workspace(ctx.config, layout, ctx.device, ctx.attention);
}

int64_t PlanReport::needed_bytes() const {
  return stages[size_t(largest_stage())].peak() + ctx.device.runtime_bytes + attention_workspace();
}

PlanReport build_plan_report(const PlanContext& ctx, const PlanLayout& layout) {
  PlanReport r;
  r.ctx = ctx;
  r.layout = layout;
  for (int s = 0; s < layout.pipeline; ++s)
    r.stages.push_back(plan_rank_memory(ctx.config, layout, s, ctx.act_bytes, ctx.host));
  r.time = estimate_step(ctx.config, layout, ctx.device, ctx.peak_flops, ctx.act_bytes);
  return r;
}

std::string format_plan_text(const PlanReport& r) {
  const PlanContext& c = r.ctx;
  const GptConfig& g = c.config;
  const PlanLayout& l = r.layout;
  std::string out;
  out += fmt::format("plan: {} on {}\n", c.recipe_path, device_line(c, l.world()));
  const double n = double(g.num_params());
  out += fmt::format("model: {}; {}\n", describe_shape(g),
                     n >= 1e9 ? fmt::format("{:.2f}B parameters", n / 1e9) : fmt::format("{:.2f}M parameters", n / 1e6));
  out += fmt::format("layout: data {} x tensor {} x pipeline {}; zero {}; micro-batch {} x {} tokens; global batch {} "
                     "({} tokens); {} micro-batches per data rank; recompute {}",
                     l.data, l.tensor, l.pipeline, l.zero, l.micro_batch, l.seq_len, l.global_batch,
                     int64_t(l.global_batch) * l.seq_len, l.grad_accum(), recompute_name(l.recompute));
  if (l.pipelined())
    out += fmt::format("; schedule {}{}, bubble fraction {:.3f}", schedule_name(l.schedule),
                       l.interleaved() ? fmt::format(" over {} virtual stages", l.virtual_stages) : "",
                       bubble_fraction(plan_pipe_shape(l)));
  out += "\n";
  const ZeroPolicy zero = l.zero_policy();
  const bool master_is_compute = zero.master_weights(plan_act_dtype(c.act_bytes)) == MasterWeights::compute_copy;
  out += fmt::format("precision: activations and compute weights {}; gradients, optimizer state and master weights "
                     "fp32{}{}\n",
                     dtype_label(c.act_bytes), master_is_compute ? " (the master is the compute copy)" : "",
                     l.reduces_in_bf16() ? "; gradients reduced over the data group in bf16" : "");

  out += "memory per rank by pipeline stage (every tensor and data rank of a stage holds the same):\n";
  const bool host = c.host == HostTransients::cpu_path;
  out += fmt::format("  {:<8} {:>6} {:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}{}\n", "stage", "layers",
                     "slots", "params", "master", "grads", "optimizer", "activations", "comm", "total",
                     host ? fmt::format(" {:>11}", "peak") : "");
  for (size_t s = 0; s < r.stages.size();) {
    size_t e = s + 1;
    while (e < r.stages.size() && same_row(r.stages[s], r.stages[e])) ++e;
    const PlanRankMemory& m = r.stages[s];
    std::string name = e - s == 1 ? std::to_string(s) : fmt::format("{}-{}", s, e - 1);
    out += fmt::format("  {:<8} {:>6} {:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}{}\n", name, m.n_layers,
                       m.acts.slots, format_bytes(m.store.params), format_bytes(m.store.master),
                       format_bytes(m.store.grads), format_bytes(m.store.optimizer), format_bytes(m.acts.activations()),
                       format_bytes(m.comm()), format_bytes(m.total()),
                       host ? fmt::format(" {:>11}", format_bytes(m.peak())) : "");
    s = e;
  }
  if (host)
    out += "  (peak: the most a CPU rank holds at once, with the host transients below)\n";

  const int ls = r.largest_stage();
  const PlanRankMemory& m = r.stages[size_t(ls)];
  const ActivationMemory& a = m.acts;
  out += fmt::format("largest rank: stage {} (tensor and data rank 0)\n", ls);
  auto row = [&out](const std::string& label, const std::string& value) {
    out += fmt::format("  {:<36} {}\n", label, value);
  };
  auto own_shard = [](bool sharded) { return sharded ? ", own shard" : ""; };
  row(fmt::format("parameters ({} compute copy{})", dtype_label(c.act_bytes), own_shard(zero.shard_parameters())),
      format_bytes(m.store.params));
  row(fmt::format("gradients (fp32{})", own_shard(zero.shard_gradients())), format_bytes(m.store.grads));
  row(fmt::format("optimizer m and v (fp32{})", own_shard(zero.shard_optimizer_state())),
      format_bytes(m.store.optimizer));
  row("fp32 master (where separate)", format_bytes(m.store.master));
  row(fmt::format("activations ({} in flight)", a.slots),
      fmt::format("{} = {} x {} + scratch {} (backward {}, recompute {}, head and logits {})",
                  format_bytes(a.activations()), a.slots, format_bytes(a.per_slot),
                  format_bytes(a.backward_scratch + a.recompute_scratch + a.head_scratch),
                  format_bytes(a.backward_scratch), format_bytes(a.recompute_scratch), format_bytes(a.head_scratch)));
  row("activations by recomputation", fmt::format("none {} | gelu {} | block {} (recipe: {})",
                                                  format_bytes(m.acts_by_recompute[0]),
                                                  format_bytes(m.acts_by_recompute[1]),
                                                  format_bytes(m.acts_by_recompute[2]), recompute_name(l.recompute)));
  row("communication buffers", fmt::format("{} = ZeRO staging{} {} + pipeline p2p {}", format_bytes(m.comm()),
                                           l.reduces_in_bf16() ? " (with the gradients' bf16 copies)" : "",
                                           format_bytes(m.staging), format_bytes(a.p2p)));
  const int64_t need = r.needed_bytes();
  if (host) {
    row("host transients (CPU path)", fmt::format("init copy of the largest parameter {}; MPI reduction temporaries {}",
                                                  format_bytes(m.init_transient), format_bytes(m.reduction_transient)));
    row("peak", fmt::format("{} = max(buffers {} + init copy, buffers {} + reduction temporaries)",
                            format_bytes(m.peak()), format_bytes(m.store.total()), format_bytes(m.total())));
  }
  const int64_t workspace = r.attention_workspace();
  row("needs", fmt::format("{} + runtime {}{} = {} of {}: {}", format_bytes(m.peak()),
                           format_bytes(c.device.runtime_bytes),
                           workspace ? " + cuDNN attention workspace " + format_bytes(workspace) : "",
                           format_bytes(need), format_bytes(c.memory_limit),
                           need <= c.memory_limit ? "fits" : "DOES NOT FIT"));
  const StepEstimate& e = r.time;
  out += fmt::format("flops: {:.4g} per step (model FLOPs, {:.4g} per token), {:.4g} per rank per step on the busiest "
                     "stage {} (incl. recomputation)\n",
                     e.flops_per_step, flops_per_token(g, l.seq_len), e.rank_flops, e.slowest_stage);
  out += "time model: " + time_line(e) + "\n";
  return out;
}

std::string format_plan_json(const PlanReport& r) {
  const PlanContext& c = r.ctx;
  const PlanLayout& l = r.layout;
  std::string out = "{";
  out += fmt::format("\"recipe\": {}, \"device\": \"{}\", \"world\": {}, \"memory_limit_bytes\": {}, "
                     "\"runtime_bytes\": {}, \"peak_flops\": {:.6g}, \"assumed_mfu\": {:.6g}, \"act_dtype\": \"{}\", ",
                     json_string(c.recipe_path), plan_device_name(c.device.kind), l.world(), c.memory_limit,
                     c.device.runtime_bytes, c.peak_flops, c.device.mfu, dtype_label(c.act_bytes));
  out += fmt::format("\"layout\": {{\"data\": {}, \"tensor\": {}, \"pipeline\": {}, \"zero\": {}, \"micro_batch\": {}, "
                     "\"global_batch\": {}, \"seq_len\": {}, \"schedule\": \"{}\", \"virtual_stages\": {}, "
                     "\"recompute\": \"{}\", \"grad_reduce_dtype\": \"{}\"}}, ",
                     l.data, l.tensor, l.pipeline, l.zero, l.micro_batch, l.global_batch, l.seq_len,
                     schedule_name(l.schedule), l.virtual_stages, recompute_name(l.recompute),
                     dtype_label(int64_t(dtype_size(l.grad_reduce_dtype))));
  out += "\"stages\": [";
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const PlanRankMemory& m = r.stages[s];
    out += fmt::format(
        "{}{{\"stage\": {}, \"layers\": {}, \"slots\": {}, \"param_elements\": {}, \"params_bytes\": {}, "
        "\"master_bytes\": {}, \"grads_bytes\": {}, \"optimizer_bytes\": {}, \"activation_bytes\": {}, "
        "\"activation_bytes_by_recompute\": {{\"none\": {}, \"gelu\": {}, \"block\": {}}}, \"per_slot_bytes\": {}, "
        "\"staging_bytes\": {}, \"p2p_bytes\": {}, \"total_bytes\": {}, \"init_transient_bytes\": {}, "
        "\"reduction_transient_bytes\": {}, \"peak_bytes\": {}}}",
        s ? ", " : "", s, m.n_layers, m.acts.slots, m.param_elements, m.store.params, m.store.master, m.store.grads,
        m.store.optimizer, m.acts.activations(), m.acts_by_recompute[0], m.acts_by_recompute[1],
        m.acts_by_recompute[2], m.acts.per_slot, m.staging, m.acts.p2p, m.total(), m.init_transient,
        m.reduction_transient, m.peak());
  }
  const int ls = r.largest_stage();
  out += fmt::format("], \"largest_stage\": {}, \"largest_rank_bytes\": {}, \"attention_workspace_bytes\": {}, "
                     "\"needed_bytes\": {}, \"fits\": {}, ",
                     ls, r.stages[size_t(ls)].peak(), r.attention_workspace(), r.needed_bytes(),
                     r.needed_bytes() <= c.memory_limit ? "true" : "false");
  out += fmt::format("\"flops_per_token\": {:.6g}, \"flops_per_step\": {:.6g}, \"flops_per_rank\": {:.6g}, \"time\": {}}}\n",
                     flops_per_token(c.config, l.seq_len), r.time.flops_per_step, r.time.rank_flops, time_json(r.time));
  return out;
}

std::string format_search_text(const PlanContext& c, const std::vector<PlanCandidate>& ranked, int top,
                               double elapsed_s) {
  const int world = ranked.empty() ? 0 : ranked.front().layout.world();
  const auto fit = std::count_if(ranked.begin(), ranked.end(), [](const PlanCandidate& p) { return p.fits; });
  std::string out;
  out += fmt::format("plan --search: {} on {}\n", c.recipe_path, device_line(c, world));
  const bool cudnn = c.device.gpu && c.attention == AttentionImpl::cudnn;
  out += fmt::format("{} valid layouts, {} fit in {} per rank (buffers + runtime {}{}); searched in {:.0f} ms\n",
                     ranked.size(), fit, format_bytes(c.memory_limit), format_bytes(c.device.runtime_bytes),
                     cudnn ? " + cuDNN attention workspace" : "", elapsed_s * 1e3);
  out += fmt::format("{:>4}  {:<11} {:>4} {:>5} {:<6} {:<7} {:>10} {:>11} {:>6} {:>11} {:>10} {:>10} {:<4}\n", "#",
                     "d x t x p", "zero", "micro", "sched", "recomp", "step s", "tokens/s", "MFU", "memory", "comm s",
                     "bubble s", "fits");
  for (int i = 0; i < std::min<int>(top, int(ranked.size())); ++i) {
    const PlanCandidate& p = ranked[size_t(i)];
    const PlanLayout& l = p.layout;
    out += fmt::format("{:>4}  {:<11} {:>4} {:>5} {:<6} {:<7} {:>10.4g} {:>11.4g} {:>5.1f}% {:>11} {:>10.3g} {:>10.3g} {:<4}\n",
                       i + 1, layout_label(l), l.zero, l.micro_batch, schedule_label(l),
                       recompute_name(l.recompute), p.time.step_s, p.time.tokens_per_s, 100.0 * p.time.mfu,
                       format_bytes(p.needed_bytes), p.time.comm_s(), p.time.bubble_s, p.fits ? "yes" : "NO");
  }
  if (int(ranked.size()) > top) out += fmt::format("({} more; --json lists all)\n", ranked.size() - size_t(top));
  return out;
}

std::string format_search_json(const PlanContext& c, const std::vector<PlanCandidate>& ranked, int world,
                               Recompute recipe_recompute) {
  std::string out = "{";
  out += fmt::format("\"recipe\": {}, \"device\": \"{}\", \"world\": {}, \"memory_limit_bytes\": {}, "
                     "\"runtime_bytes\": {}, \"peak_flops\": {:.6g}, \"assumed_mfu\": {:.6g}, \"act_dtype\": \"{}\", "
                     "\"recipe_recompute\": \"{}\", \"layouts\": [",
                     json_string(c.recipe_path), plan_device_name(c.device.kind), world, c.memory_limit,
                     c.device.runtime_bytes, c.peak_flops, c.device.mfu, dtype_label(c.act_bytes),
                     recompute_name(recipe_recompute));
  for (size_t i = 0; i < ranked.size(); ++i) {
    const PlanCandidate& p = ranked[i];
    const PlanLayout& l = p.layout;
    out += fmt::format("{}\n{{\"rank\": {}, \"data\": {}, \"tensor\": {}, \"pipeline\": {}, \"zero\": {}, "
                       "\"micro_batch\": {}, \"schedule\": \"{}\", \"virtual_stages\": {}, \"recompute\": \"{}\", "
                       "\"largest_rank_bytes\": {}, \"largest_stage\": {}, \"needed_bytes\": {}, \"fits\": {}, \"time\": {}}}",
                       i ? "," : "", i + 1, l.data, l.tensor, l.pipeline, l.zero, l.micro_batch, schedule_name(l.schedule),
                       l.virtual_stages, recompute_name(l.recompute), p.largest_rank_bytes, p.largest_stage, p.needed_bytes,
                       p.fits ? "true" : "false", time_json(p.time));
  }
  out += "\n]}\n";
  return out;
}

RooflineChoice ops_roofline(const PlanContext& ctx, Ceilings ceilings, double bandwidth_override,
                            double recipe_peak_tflops) {
  RooflineChoice c = roofline_for(ctx.device.device(), ctx.device.name, ctx.act_bytes == 2 ? DType::bf16 : DType::f32,
                                  ceilings, bandwidth_override, recipe_peak_tflops);
  if (!(c.roof.bytes_per_s > 0)) {
    c.roof.bytes_per_s = ctx.device.hbm_bytes_per_s;
    c.bandwidth_source = "the planner's estimate";
  }
  return c;
}

std::vector<PlanStageOps> build_ops_report(const PlanContext& ctx, const PlanLayout& layout,
                                           const RooflineChoice& choice) {
  std::vector<PlanStageOps> stages;
  const Roofline& roof = choice.roof;
  for (int s = 0; s < layout.pipeline; ++s) {
    PlanStageOps st;
    st.pp_rank = s;
    for (const OpProfileRow& r : plan_step_ops(ctx.config, layout, s, ctx.act_bytes, ctx.host)) {
      PlanOpRow o;
      o.op = r.op;
      o.shape = r.shape;
      o.calls = double(r.calls);
      o.bytes = r.bytes;
      o.flops = r.flops;
      o.compute_bound = roof.compute_bound(r.bytes, r.flops);
      o.floor_s = roof.floor_s(r.bytes, r.flops);
      st.bytes += o.bytes;
      st.flops += o.flops;
      st.floor_s += o.floor_s;
      st.rows.push_back(std::move(o));
    }
    std::stable_sort(st.rows.begin(), st.rows.end(),
                     [](const PlanOpRow& a, const PlanOpRow& b) { return a.floor_s > b.floor_s; });
    stages.push_back(std::move(st));
  }
  return stages;
}

std::string format_ops_text(const PlanContext& ctx, const PlanLayout& l, const RooflineChoice& roof,
                            const std::vector<PlanStageOps>& stages) {
  std::string out = fmt::format(
      "{}: the ops of one step ({} micro-batch{} of {} x {}, {}), per rank of each stage ({}), with the floor the "
      "{}'s ceilings give them: {}\n",
      ctx.recipe_path, l.grad_accum(), l.grad_accum() == 1 ? "" : "es", l.micro_batch, l.seq_len,
      dtype_label(ctx.act_bytes), layout_label(l), ctx.device.name, roof.describe());
  for (const PlanStageOps& st : stages) {
    out += fmt::format("  stage {} of {}: floor {:.3f} ms, {:.3f} GB, {:.2f} TFLOP\n", st.pp_rank, l.pipeline,
                       1e3 * st.floor_s, st.bytes / 1e9, st.flops / 1e12);
    out += fmt::format("    {:>10} {:>6} {:>8} {:>10} {:>10} {:<8} {:<20} {}\n", "floor ms", "share", "calls", "MB",
                       "GFLOP", "bound", "op", "shape");
    for (const PlanOpRow& r : st.rows)
      out += fmt::format("    {:>10.3f} {:>5.1f}% {:>8.0f} {:>10.1f} {:>10.1f} {:<8} {:<20} {}\n", 1e3 * r.floor_s,
                         st.floor_s > 0 ? 100 * r.floor_s / st.floor_s : 0.0, r.calls, r.bytes / 1e6, r.flops / 1e9,
                         r.compute_bound ? "compute" : "memory", r.op, r.shape);
  }
  out += "  (a floor, not a prediction: launches, communication and kernels below their ceilings are not in it; "
         "`trainer bench --profile` measures the same rows)\n";
  return out;
}

std::string format_ops_json(const PlanContext& ctx, const RooflineChoice& roof, const std::vector<PlanStageOps>& stages) {
  std::string out = fmt::format(
      "{{\"device\": {}, \"hbm_bytes_per_s\": {:.6g}, \"bandwidth_source\": {}, \"peak_flops\": {:.6g}, "
      "\"peak_source\": {}, \"stages\": [",
      json_string(ctx.device.name), roof.roof.bytes_per_s, json_string(roof.bandwidth_source), roof.roof.flops_per_s,
      json_string(roof.peak_source));
  for (size_t i = 0; i < stages.size(); ++i) {
    const PlanStageOps& st = stages[i];
    out += fmt::format("{}{{\"pp_rank\": {}, \"floor_s\": {:.6g}, \"bytes\": {:.17g}, \"flops\": {:.17g}, \"ops\": [",
                       i ? ", " : "", st.pp_rank, st.floor_s, st.bytes, st.flops);
    for (size_t j = 0; j < st.rows.size(); ++j) {
      const PlanOpRow& r = st.rows[j];
      out += fmt::format("{}{{\"op\": {}, \"shape\": {}, \"calls\": {:.17g}, \"bytes\": {:.17g}, \"flops\": {:.17g}, "
                         "\"floor_s\": {:.6g}, \"bound\": \"{}\"}}",
                         j ? ", " : "", json_string(r.op), json_string(r.shape), r.calls, r.bytes, r.flops, r.floor_s,
                         r.compute_bound ? "compute" : "memory");
    }
    out += "]}";
  }
  return out + "]}\n";
}

}  // namespace trainer
