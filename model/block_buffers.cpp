// The buffers a block carves (see block_buffers.h).
#include "model/block_buffers.h"

namespace trainer {

BlockDims block_dims(const GptConfig& cfg, int tp, int64_t B, int64_t T, int64_t rows) {
  const ModelFamily& f = cfg.family();
  BlockDims d{};
  d.B = B;
  d.T = T;
  d.N = B * T;
  d.rows = rows;
  d.C = cfg.d_model;
  d.Cl = cfg.d_model / tp;
  d.Hl = cfg.n_head / tp;
  d.Hkvl = cfg.kv_heads() / tp;
  d.D = cfg.head_dim();
  d.Ql = (d.Hl + 2 * d.Hkvl) * d.D;
  d.Fl = cfg.mlp_dim() / tp;
  d.fc = f.fc_width(d.Fl);
  d.norm = f.norm;
  d.mlp = f.mlp;
  d.positions = f.positions;
  d.qk_norm = cfg.qk_norm;
  return d;
}

NormStats take_norm_stats(TensorArena& a, NormKind norm, int64_t rows) {
  NormStats s;
  if (norm == NormKind::layernorm) s.mean = a.take(DType::f32, {rows});
  s.rstd = a.take(DType::f32, {rows});
  return s;
}

BlockActs take_block_acts(TensorArena& a, DType act, const BlockDims& d, GeluBuffer gelu) {
  const int64_t N = d.N;
  BlockActs x;
  x.ln1 = a.take(act, {N, d.C});
  const NormStats ln1 = take_norm_stats(a, d.norm, d.rows);
  x.ln1_mean = ln1.mean;
  x.ln1_rstd = ln1.rstd;
  if (d.qk_norm == QkNorm::on) {
    x.qkv_raw = a.take(act, {N, d.Ql});
    x.qk_rstd = a.take(DType::f32, {N * (d.Hl + d.Hkvl)});
  }
  x.qkv = a.take(act, {N, d.Ql});
  x.atty = a.take(act, {N, d.Cl});
  x.lse = a.take(DType::f32, {d.B, d.Hl, d.T});
  x.resid2 = a.take(act, {d.rows, d.C});
  x.ln2 = a.take(act, {N, d.C});
  const NormStats ln2 = take_norm_stats(a, d.norm, d.rows);
  x.ln2_mean = ln2.mean;
  x.ln2_rstd = ln2.rstd;
  x.fch = a.take(act, {N, d.fc});
  if (gelu == GeluBuffer::own) x.fch_gelu = a.take(act, {N, d.Fl});
  return x;
}

BlockScratch take_block_scratch(TensorArena& a, DType act, const BlockDims& d, SeqParallel sp) {
  const int64_t N = d.N;
  BlockScratch s;
  s.dln = a.take(act, {N, d.C});
  s.datty = a.take(act, {N, d.Cl});
  s.dfch = a.take(act, {N, d.fc});
  // SwiGLU's backward needs its output's gradient apart (GELU's is fused into the product).
  if (d.mlp == MlpKind::swiglu) s.dact = a.take(act, {N, d.Fl});
  s.dqkv = a.take(act, {N, d.Ql});
  if (sp == SeqParallel::on) {
    s.row_out = a.take(act, {N, d.C});
    s.d_full = a.take(act, {N, d.C});
    s.dln_local = a.take(act, {d.rows, d.C});
  }
  return s;
}

BlockGradStash take_block_stash(TensorArena& a, DType act, const BlockDims& d) {
  BlockGradStash g;
  g.dmlp = a.take(act, {d.N, d.C});
  g.dfch = a.take(act, {d.N, d.fc});
  g.dattn = a.take(act, {d.N, d.C});
  g.dqkv = a.take(act, {d.N, d.Ql});
  return g;
}

Tensor take_rope_freq(TensorArena& a, const BlockDims& d) {
  return d.positions == Positions::rotary ? a.take(DType::f32, {d.D / 2}) : Tensor{};
}

}  // namespace trainer
