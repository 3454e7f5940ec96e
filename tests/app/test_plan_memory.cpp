// trainer plan's memory without running a trainer: the closed-form unit sizes the layout search
// uses equal the trainer's StageLayout for every rank coordinate; ParamStore's buffers and
// GptStage's activation buffers by hand for a small case, from the closed forms and from the
// dry run; the layout search's closed forms equal the dry run, figure by figure, for every
// layout of small worlds. (That the dry run equals what a running trainer allocates is
// mpi_plan_memory.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "app/plan/plan_activation.h"
#include "app/plan/plan_closed_form.h"
#include "app/plan/plan_dry_run.h"
#include "app/plan/plan_report.h"
#include "app/plan/plan_search.h"
#include "model/stage_layout.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

GptConfig small_config(int n_layer, int n_head, int d_model, int vocab, int multiple, int max_seq) {
  return testing::gpt_config(n_layer, n_head, d_model, vocab, (vocab + multiple - 1) / multiple * multiple, max_seq);
}

// The closed form against the layout object itself.
void check_same_units(const PlanUnits& u, const StageLayout& layout) {
  std::vector<int64_t> padded;
  for (const LocalUnit& lu : layout.units()) padded.push_back(lu.padded);
  int64_t max_param = 0;
  for (const LocalParam& p : layout.params()) max_param = std::max(max_param, p.numel);
  CHECK(u.padded == padded);
  CHECK(u.max_param == max_param);
  CHECK(u.dims.data == layout.dims().data);
  CHECK(u.n_layers == layout.n_layers());
  CHECK(u.first == layout.has_embedding());
  CHECK(u.last == layout.has_head());
  CHECK(u.unit_wte == layout.unit_wte());
  CHECK(u.unit_wpe == layout.unit_wpe());
  CHECK(u.unit_first_block == (layout.n_layers() > 0 ? layout.unit_block(0) : -1));
  CHECK(u.unit_lnf == layout.unit_lnf());
  CHECK(u.unit_head_wte == layout.unit_head_wte());
  CHECK(u.total() == layout.total());
  CHECK(u.shard_total() == layout.shard_total());
  CHECK(u.max_padded() == layout.max_unit_padded());
}

void check_same_memory(const PlanRankMemory& a, const PlanRankMemory& b) {
  CHECK(a.n_layers == b.n_layers);
  CHECK(a.param_elements == b.param_elements);
  CHECK(a.store.params == b.store.params);
  CHECK(a.store.master == b.store.master);
  CHECK(a.store.grads == b.store.grads);
  CHECK(a.store.optimizer == b.store.optimizer);
  CHECK(a.staging == b.staging);
  CHECK(a.acts.per_slot == b.acts.per_slot);
  CHECK(a.acts.slots == b.acts.slots);
  CHECK(a.acts.backward_scratch == b.acts.backward_scratch);
  CHECK(a.acts.recompute_scratch == b.acts.recompute_scratch);
  CHECK(a.acts.head_scratch == b.acts.head_scratch);
  CHECK(a.acts.p2p == b.acts.p2p);
  for (int i = 0; i < 3; ++i) CHECK(a.acts_by_recompute[i] == b.acts_by_recompute[i]);
  CHECK(a.init_transient == b.init_transient);
  CHECK(a.reduction_transient == b.reduction_transient);
}

}  // namespace

// The same shape as a llama: 6 query heads on 6 or 3 k/v heads (tp 1, 2, 3, 6 or 1, 3),
// SwiGLU width 72, tied or untied, with or without qk_norm.
GptConfig llama_of(GptConfig c, int n_kv_head, TiedEmbeddings tie, QkNorm qk) {
  c.arch = llama_family().arch;
  c.n_kv_head = n_kv_head;
  c.ffn_dim = 72;
  c.tie = tie;
  c.qk_norm = qk;
  return c;
}

TEST_CASE("plan: closed-form unit sizes equal StageLayout's for every rank coordinate") {
  const GptConfig gpt2 = small_config(5, 6, 48, 257, 12, 24);  // padded vocab 264: tp 1, 2, 3, 6
  for (const GptConfig& c : {gpt2, llama_of(gpt2, 6, TiedEmbeddings::untied, QkNorm::off),
                             llama_of(gpt2, 3, TiedEmbeddings::tied, QkNorm::on)})
  for (int tp : {1, 2, 3, 6})
    for (int dp : {1, 2, 3, 5})
      for (int pp : {1, 2, 3, 5})
        for (int pp_rank = 0; pp_rank < pp; ++pp_rank)
          for (int tp_rank = 0; tp_rank < tp; ++tp_rank)
            for (int dp_rank = 0; dp_rank < dp; ++dp_rank) {
              if (c.kv_heads() % tp != 0) continue;
              CAPTURE(model_arch_name(c.arch));
              CAPTURE(tp);
              CAPTURE(dp);
              CAPTURE(pp);
              CAPTURE(pp_rank);
              LayoutOptions o{ParallelDims{dp, tp, pp, 1}, GridCoords{dp_rank, tp_rank, pp_rank}, {}};
              check_same_units(plan_units_closed_form(c, o.dims, pp_rank, {}), StageLayout(c, o));
            }
  // An explicit stage split.
  for (int s = 0; s < 3; ++s) {
    LayoutOptions o{ParallelDims{2, 2, 3, 1}, GridCoords{1, 0, s}, {1, 3, 1}};
    check_same_units(plan_units_closed_form(gpt2, o.dims, s, {1, 3, 1}), StageLayout(gpt2, o));
  }
  // Virtual stages: 2 and 3 chunks per rank, even and explicit splits.
  const GptConfig deep = small_config(7, 6, 48, 257, 12, 24);
  for (int pp : {2, 3})
    for (int v : {2, 3}) {
      if (pp * v > deep.n_layer) continue;
      for (int s = 0; s < pp; ++s) {
        CAPTURE(pp);
        CAPTURE(v);
        CAPTURE(s);
        LayoutOptions o{ParallelDims{2, 2, pp, v}, GridCoords{1, 0, s}, {}};
        const PlanUnits u = plan_units_closed_form(deep, o.dims, s, {});
        const StageLayout layout(deep, o);
        check_same_units(u, layout);
        REQUIRE(int(u.chunk_layers.size()) == v);
        for (int c = 0; c < v; ++c) CHECK(u.chunk_layers[size_t(c)] == layout.chunk_layers(c));
      }
    }
  std::vector<int> split = {1, 2, 1, 3};
  for (int s = 0; s < 2; ++s) {
    LayoutOptions o{ParallelDims{1, 1, 2, 2}, GridCoords{0, 0, s}, split};
    check_same_units(plan_units_closed_form(deep, o.dims, s, split), StageLayout(deep, o));
  }
}

TEST_CASE("plan: ParamStore buffers per ZeRO stage, by hand") {
  PlanUnits u;
  u.padded = {100, 40, 60};  // elements, multiples of dp (made up: real units are of 8 dp)
  u.dims.data = 2;
  const int64_t total = 200, shard = 100;
  // fp32 (the CPU path): the master is the compute copy except under ZeRO-3.
  StoreMemory z0 = plan_store_memory(u, zero_policy(0), 4);
  CHECK(z0.params == total * 4);
  CHECK(z0.master == 0);
  CHECK(z0.grads == total * 4);
  CHECK(z0.optimizer == 2 * total * 4);
  StoreMemory z1 = plan_store_memory(u, zero_policy(1), 4);
  CHECK(z1.grads == total * 4);
  CHECK(z1.optimizer == 2 * shard * 4);
  StoreMemory z2 = plan_store_memory(u, zero_policy(2), 4);
  CHECK(z2.params == total * 4);
  CHECK(z2.grads == shard * 4);
  StoreMemory z3 = plan_store_memory(u, zero_policy(3), 4);
  CHECK(z3.params == 0);  // the shard is the f32 master
  CHECK(z3.master == shard * 4);
  CHECK(z3.grads == shard * 4);
  // bf16: a separate fp32 master, full for zero 0, the shard otherwise.
  StoreMemory b0 = plan_store_memory(u, zero_policy(0), 2);
  CHECK(b0.params == total * 2);
  CHECK(b0.master == total * 4);
  StoreMemory b1 = plan_store_memory(u, zero_policy(1), 2);
  CHECK(b1.master == shard * 4);
  StoreMemory b3 = plan_store_memory(u, zero_policy(3), 2);
  CHECK(b3.params == shard * 2);
  CHECK(b3.master == shard * 4);
  CHECK(b3.optimizer == 2 * shard * 4);
}

TEST_CASE("plan: activation buffers by hand (B 2, T 4, C 8, 2 heads, vocab 16, one stage)") {
  const GptConfig c = small_config(3, 2, 8, 16, 1, 4);
  ActivationDims d;
  d.micro_batch = 2;
  d.seq_len = 4;
  d.model = c;
  d.n_layers = 3;
  d.act_bytes = 4;
  // The dry run of the same model: GptStage's own buffers.
  PlanLayout l;
  l.micro_batch = 2;
  l.global_batch = 2;
  l.seq_len = 4;
  auto dry = [&](Recompute r) {
    l.recompute = r;
    return plan_rank_memory(c, l, 0, 4, HostTransients::none).acts;
  };
  // N = 8 rows: an (N, C) f32 tensor is 256 bytes; (N) f32 is 32 -> 64 with the arena's
  // alignment; (N, 3C) 768; (N, 4C) 1024; lse (B, H, T) 64; logits (N, V) 512; row (V) 64.
  const int64_t nc = 256, n = 64, block_none = nc + 2 * n + 768 + nc + 64 + nc + nc + 2 * n + 1024 + 1024;
  const int64_t backward = nc + nc + nc + 1024 + 768;
  const int64_t head = nc + 2 * n + 512 + n + 64 + n + n + nc + 64;  // ... losses, loss_acc, dlnf, row
  for (const ActivationMemory& p : {plan_activations(d, 1), dry(Recompute::none)}) {
    CHECK(p.per_slot == 2 * 64 + 4 * nc + 3 * block_none + nc);
    CHECK(p.backward_scratch == backward);
    CHECK(p.recompute_scratch == 0);
    CHECK(p.head_scratch == head);
    CHECK(p.p2p == 0);
  }
  d.recompute = Recompute::gelu;
  for (const ActivationMemory& g : {plan_activations(d, 1), dry(Recompute::gelu)}) {
    CHECK(g.per_slot == 2 * 64 + 4 * nc + 3 * (block_none - 1024) + nc);
    CHECK(g.recompute_scratch == 1024);
    CHECK(g.scratch() == backward + 1024 + head);
  }
  d.recompute = Recompute::block;
  const ActivationMemory b = plan_activations(d, 3);
  CHECK(b.per_slot == 2 * 64 + 4 * nc + nc);
  CHECK(b.recompute_scratch == block_none);
  CHECK(b.total() == 3 * b.per_slot + b.scratch());
  const ActivationMemory b1 = dry(Recompute::block);
  CHECK(b1.per_slot == b.per_slot);
  CHECK(b1.recompute_scratch == b.recompute_scratch);
  CHECK(b1.scratch() == b.scratch());
  CHECK(b1.slots == 1);
  // A middle pipeline stage: no head, both kinds of point-to-point buffers.
  d.first = false;
  d.last = false;
  const ActivationMemory mid = plan_activations(d, 2);
  CHECK(mid.head_scratch == 0);
  CHECK(mid.p2p == 6 * nc);
  CHECK(mid.activations() == mid.total() - 6 * nc);
}

TEST_CASE("plan: the layout search's closed forms equal the dry run for every layout of small worlds") {
  const GptConfig gpt2 = small_config(6, 4, 32, 257, 64, 16);
  GptConfig llama = gpt2;
  llama.arch = llama_family().arch;
  llama.n_kv_head = 2;
  llama.ffn_dim = 48;
  llama.tie = TiedEmbeddings::untied;
  llama.qk_norm = QkNorm::on;
  for (const GptConfig& c : {gpt2, llama})
  for (DType reduce : {DType::f32, DType::bf16})
  for (int world : {1, 2, 4, 6, 8}) {
    for (PlanDevice dev : {PlanDevice::cpu, PlanDevice::h100}) {
      SearchInput in;
      in.grad_reduce_dtype = reduce;
      in.config = c;
      in.world = world;
      in.global_batch = 24;
      in.seq_len = 16;
      in.device = device_spec(dev, world);
      in.peak_flops = 1e12;
      in.act_bytes = dev == PlanDevice::cpu ? 4 : 2;
      in.memory_limit = int64_t(1) << 40;
      in.host = dev == PlanDevice::cpu ? HostTransients::cpu_path : HostTransients::none;
      in.recompute = {Recompute::none, Recompute::gelu, Recompute::block};
      const std::vector<PlanLayout> layouts = enumerate_layouts(in);
      REQUIRE(!layouts.empty());
      for (const PlanLayout& l : layouts) {
        CAPTURE(dtype_name(l.grad_reduce_dtype));
        CAPTURE(world);
        CAPTURE(l.data);
        CAPTURE(l.tensor);
        CAPTURE(l.pipeline);
        CAPTURE(l.zero);
        CAPTURE(l.micro_batch);
        const PlanCandidate cand = evaluate_layout(in, l);
        PlanContext ctx;
        ctx.config = c;
        ctx.device = in.device;
        ctx.peak_flops = in.peak_flops;
        ctx.act_bytes = in.act_bytes;
        ctx.memory_limit = in.memory_limit;
        ctx.host = in.host;
        const PlanReport report = build_plan_report(ctx, l);
        CHECK(cand.largest_rank_bytes == report.stages[size_t(report.largest_stage())].peak());
        CHECK(cand.needed_bytes == report.needed_bytes());
        for (int s = 0; s < l.pipeline; ++s) {
          CAPTURE(s);
          check_same_memory(plan_rank_memory_closed_form(c, l, s, in.act_bytes, in.host), report.stages[size_t(s)]);
          if (l.grad_accum() > 2 * l.pipeline + 2)
            check_same_memory(plan_rank_memory(c, l, s, in.act_bytes, in.host, PlanReplay::full),
                              report.stages[size_t(s)]);
        }
      }
    }
  }
}

TEST_CASE("plan: train.attention cudnn adds cuDNN's dP workspace on GPUs, in the report and in the search") {
  const GptConfig c = small_config(2, 4, 32, 257, 64, 128);
  PlanLayout l;
  l.data = 1;
  l.tensor = 2;
  l.micro_batch = 3;
  l.global_batch = 3;
  l.seq_len = 100;  // rounded up to 128 as cudnn-frontend sizes it
  const int64_t want = 3 * (4 / 2) * 128 * 128 * 2;
  for (PlanDevice dev : {PlanDevice::cpu, PlanDevice::h200}) {
    CAPTURE(plan_device_name(dev));
    const DeviceSpec d = device_spec(dev, 2);
    CHECK(plan_attention_workspace(c, l, d, AttentionImpl::flash) == 0);
    CHECK(plan_attention_workspace(c, l, d, AttentionImpl::auto_detect) == 0);
    CHECK(plan_attention_workspace(c, l, d, AttentionImpl::cudnn) == (d.gpu ? want : 0));
    PlanContext ctx;
    ctx.config = c;
    ctx.device = d;
    ctx.peak_flops = 1e12;
    ctx.act_bytes = d.gpu ? 2 : 4;
    ctx.memory_limit = int64_t(1) << 40;
    ctx.host = d.gpu ? HostTransients::none : HostTransients::cpu_path;
    const PlanReport flash = build_plan_report(ctx, l);
    ctx.attention = AttentionImpl::cudnn;
    const PlanReport cudnn = build_plan_report(ctx, l);
    CHECK(cudnn.needed_bytes() - flash.needed_bytes() == (d.gpu ? want : 0));
    CHECK((format_plan_text(cudnn).find("cuDNN attention workspace") != std::string::npos) == d.gpu);
    CHECK(format_plan_json(cudnn).find("\"attention_workspace_bytes\": " + std::to_string(d.gpu ? want : 0)) !=
          std::string::npos);
    SearchInput in;
    in.config = c;
    in.world = 2;
    in.global_batch = 3;
    in.seq_len = 100;
    in.device = d;
    in.peak_flops = ctx.peak_flops;
    in.act_bytes = ctx.act_bytes;
    in.memory_limit = ctx.memory_limit;
    in.host = ctx.host;
    in.attention = AttentionImpl::cudnn;
    CHECK(evaluate_layout(in, l).needed_bytes == cudnn.needed_bytes());
  }
}

TEST_CASE("plan: the CPU path's host transients") {
  const GptConfig c = small_config(2, 4, 32, 257, 64, 16);  // wte (320, 32) is the largest tensor
  PlanLayout l;
  l.data = 2;
  l.zero = 1;
  l.micro_batch = 2;
  l.global_batch = 4;
  l.seq_len = 16;
  const PlanUnits u = plan_units_closed_form(c, ParallelDims{2, 1, 1}, 0, {});
  for (const PlanRankMemory& m : {plan_rank_memory(c, l, 0, 4, HostTransients::cpu_path),
                                  plan_rank_memory_closed_form(c, l, 0, 4, HostTransients::cpu_path)}) {
    CHECK(m.init_transient == 320 * 32 * 4);
    // ZeRO-1: every gradient bucket's all-reduce is in flight at once: a second copy of them.
    CHECK(m.reduction_transient == u.total() * 4);
    CHECK(m.peak() == std::max(m.store.total() + m.init_transient, m.total() + m.reduction_transient));
  }
  // GPUs: NCCL's temporaries are not device memory, and the init's staging buffer (a few MB)
  // is inside the runtime figure.
  for (const PlanRankMemory& g : {plan_rank_memory(c, l, 0, 2, HostTransients::none),
                                  plan_rank_memory_closed_form(c, l, 0, 2, HostTransients::none)}) {
    CHECK(g.init_transient == 0);
    CHECK(g.reduction_transient == 0);
    CHECK(g.peak() == g.total());
  }
  // One data rank reduces nothing.
  l.data = 1;
  l.global_batch = 2;
  CHECK(plan_rank_memory(c, l, 0, 4, HostTransients::cpu_path).reduction_transient == 0);
  CHECK(plan_rank_memory_closed_form(c, l, 0, 4, HostTransients::cpu_path).reduction_transient == 0);
  // Pipelined: the tied embedding's all-reduce on the first and last stage.
  l.pipeline = 2;
  const PlanUnits last = plan_units_closed_form(c, ParallelDims{1, 1, 2}, 1, {});
  const int64_t tied = last.padded[size_t(last.unit_head_wte)] * 4;
  CHECK(plan_rank_memory(c, l, 1, 4, HostTransients::cpu_path).reduction_transient == tied);
  CHECK(plan_rank_memory_closed_form(c, l, 1, 4, HostTransients::cpu_path).reduction_transient == tied);
}
