// The pieces GptStage and GptDecoder share (see stage_parts.h).
#include "model/stage_parts.h"

#include <string>

#include "kernels/base/check.h"
#include "model/param_table.h"
#include "model/tp_comm.h"

namespace trainer {

namespace {

// The matrices from `first` to `last` (adjacent in the buffer: the table orders them so) as
// one (rows, C) weight.
Tensor fused_rows(Tensor first, Tensor last, int64_t rows) {
  const int64_t cols = first.size(-1);
  TRAINER_CHECK(static_cast<const char*>(last.data) + last.bytes() ==
                    static_cast<const char*>(first.data) + size_t(rows * cols) * dtype_size(first.dtype),
                "fused projection: its matrices are not adjacent in the buffer");
  return make_tensor(first.data, first.dtype, first.device, {rows, cols});
}

NormKind norm_kind(const GptConfig& cfg) {
  return cfg.arch == ModelArch::llama ? NormKind::rmsnorm : NormKind::layernorm;
}

}  // namespace

BlockDims block_dims(const StageLayout& layout, int64_t B, int64_t T, int64_t rows) {
  const GptConfig& cfg = layout.config();
  const int64_t tp = layout.options().tp, D = cfg.head_dim();
  const int64_t Hl = cfg.n_head / tp, Hkvl = cfg.kv_heads() / tp;
  return BlockDims{B,  T,    B * T, rows, cfg.d_model, cfg.d_model / tp, Hl, Hkvl, (Hl + 2 * Hkvl) * D,
                   cfg.mlp_dim() / tp, cfg.arch, norm_kind(cfg), cfg.qk_norm};
}

BlockActs take_block_acts(TensorArena& a, DType act, const BlockDims& d, GeluBuffer gelu) {
  const int64_t N = d.N;
  const bool layernorm = d.norm == NormKind::layernorm;
  const int64_t fc = d.arch == ModelArch::llama ? 2 * d.Fl : d.Fl;  // llama: [gate | up]
  BlockActs x;
  x.ln1 = a.take(act, {N, d.C});
  if (layernorm) x.ln1_mean = a.take(DType::f32, {d.rows});
  x.ln1_rstd = a.take(DType::f32, {d.rows});
  if (d.qk_norm == QkNorm::on) {
    x.qkv_raw = a.take(act, {N, d.Ql});
    x.qk_rstd = a.take(DType::f32, {N * (d.Hl + d.Hkvl)});
  }
  x.qkv = a.take(act, {N, d.Ql});
  x.atty = a.take(act, {N, d.Cl});
  x.lse = a.take(DType::f32, {d.B, d.Hl, d.T});
  x.resid2 = a.take(act, {d.rows, d.C});
  x.ln2 = a.take(act, {N, d.C});
  if (layernorm) x.ln2_mean = a.take(DType::f32, {d.rows});
  x.ln2_rstd = a.take(DType::f32, {d.rows});
  x.fch = a.take(act, {N, fc});
  if (gelu == GeluBuffer::own) x.fch_gelu = a.take(act, {N, d.Fl});
  return x;
}

BlockParams stage_block_params(const StageLayout& layout, const ParamStore& store, Tensor base, int unit,
                               int local_layer) {
  const GptConfig& cfg = layout.config();
  const std::string h = layer_prefix(cfg, layout.global_layer(local_layer));
  auto v = [&](const char* name) { return store.view(base, unit, h + name); };
  if (cfg.arch == ModelArch::gpt2)
    return BlockParams{v("ln_1.weight"), v("ln_1.bias"), v("attn.c_attn.weight"), v("attn.c_attn.bias"),
                       v("attn.c_proj.weight"), v("attn.c_proj.bias"), v("ln_2.weight"), v("ln_2.bias"),
                       v("mlp.c_fc.weight"), v("mlp.c_fc.bias"), v("mlp.c_proj.weight"), v("mlp.c_proj.bias"),
                       Tensor{}, Tensor{}};
  const BlockDims w = block_dims(layout, 1, 1, 1);
  BlockParams p;
  p.ln1w = v("input_layernorm.weight");
  p.qkvw = fused_rows(v("self_attn.q_proj.weight"), v("self_attn.v_proj.weight"), w.Ql);
  p.projw = v("self_attn.o_proj.weight");
  p.ln2w = v("post_attention_layernorm.weight");
  p.fcw = fused_rows(v("mlp.gate_proj.weight"), v("mlp.up_proj.weight"), 2 * w.Fl);
  p.fcprojw = v("mlp.down_proj.weight");
  if (cfg.qk_norm == QkNorm::on) {
    p.qnormw = v("self_attn.q_norm.weight");
    p.knormw = v("self_attn.k_norm.weight");
  }
  return p;
}

HeadParams acquire_head(const StageLayout& layout, ParamStore& store) {
  const GptConfig& cfg = layout.config();
  const int uf = layout.unit_lnf(), uw = layout.unit_head_wte();
  const char* bias_name = final_norm_bias_name(cfg);
  Tensor fbase = store.acquire(uf);
  HeadParams h;
  h.normw = store.view(fbase, uf, final_norm_weight_name(cfg));
  if (bias_name) h.normb = store.view(fbase, uf, bias_name);
  h.wte = store.view(store.acquire(uw), uw, head_name(cfg));
  return h;
}

void release_head(const StageLayout& layout, ParamStore& store) {
  store.release(layout.unit_head_wte());
  store.release(layout.unit_lnf());
}

BlockContext stage_block_context(const StageLayout& layout, Backend& backend, Comm* tp, int64_t B, int64_t T,
                                 SeqParallel sp, Tensor inv_freq) {
  const GptConfig& cfg = layout.config();
  const BlockDims w = block_dims(layout, B, T, B * T);
  return BlockContext{backend,          tp,         layout.options().tp_rank, int(B),   int(T),
                      int(cfg.d_model), int(w.Hl),  sp,                       norm_kind(cfg), cfg.norm_eps,
                      int(w.Hkvl),      cfg.qk_norm, inv_freq,                Tensor{}, Tensor{},
                      0};
}

std::vector<float> gather_vocab_row(const StageLayout& layout, Backend& backend, Comm* tp, Tensor local,
                                    Tensor gathered) {
  const int tp_size = layout.options().tp, tp_rank = layout.options().tp_rank;
  const int64_t Vl = local.numel();
  Tensor mine = gathered.flat(int64_t(tp_rank) * Vl, int64_t(tp_rank + 1) * Vl);
  if (local.dtype == DType::f32) backend.copy(mine.data, local.data, mine.bytes());
  else backend.cast(mine, local);
  if (tp_active(tp)) tp->all_gather(gathered, mine);
  std::vector<float> host(size_t(tp_size) * size_t(Vl));
  backend.copy_to_host(host.data(), gathered.data, gathered.bytes());
  host.resize(size_t(layout.config().vocab_size));
  return host;
}

}  // namespace trainer
