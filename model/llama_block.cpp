// Llama block forward and backward (see gpt_block.h). Fused products: q, k and v come out of
// one matmul with the adjacent q_proj/k_proj/v_proj slices as one (Ql, C) weight, gate and up
// out of one with gate_proj/up_proj as one (2Fl, C) weight. Rope rotates the qkv buffer in
// place (its backward is the transposed rotation, so the unrotated values are never needed);
// with qk_norm the projection's output is kept (qkv_raw) for the norm's backward.
#include "kernels/base/check.h"
#include "model/block_parts.h"
#include "model/gpt_block.h"

namespace trainer {

using namespace block_parts;

void llama_block_forward(const BlockContext& ctx, const BlockParams& w, const BlockActs& a, const BlockScratch& s,
                         Tensor inp, Tensor out) {
  Backend& b = ctx.backend;
  const int H = ctx.n_head_local, Hkv = ctx.n_kv_head_local;
  norm_into(ctx, a.ln1, Tensor{}, a.ln1_rstd, inp, w.ln1w, Tensor{});
  if (ctx.qk_norm == QkNorm::on) {
    b.matmul(a.qkv_raw, a.ln1, w.qkvw, N, T, Tensor{}, Accumulate::overwrite, Tensor{});
    b.head_rmsnorm_forward(bt3(ctx, a.qkv), a.qk_rstd, bt3(ctx, a.qkv_raw), w.qnormw, w.knormw, H, Hkv,
                           ctx.norm_eps);
  } else {
    b.matmul(a.qkv, a.ln1, w.qkvw, N, T, Tensor{}, Accumulate::overwrite, Tensor{});
  }
  b.rope_forward(bt3(ctx, a.qkv), bt3(ctx, a.qkv), ctx.inv_freq, H, Hkv, ctx.past, ctx.positions);
  attend(ctx, a);
  row_parallel_into(ctx, s, a.resid2, a.atty, w.projw, Tensor{}, inp);

  norm_into(ctx, a.ln2, Tensor{}, a.ln2_rstd, a.resid2, w.ln2w, Tensor{});
  b.matmul(a.fch, a.ln2, w.fcw, N, T, Tensor{}, Accumulate::overwrite, Tensor{});
  b.swiglu_forward(a.fch_gelu, a.fch);
  row_parallel_into(ctx, s, out, a.fch_gelu, w.fcprojw, Tensor{}, a.resid2);
}

void llama_block_backward(const BlockContext& ctx, const BlockParams& w, const BlockParams& g, const BlockActs& a,
                          const BlockScratch& s, Tensor inp, Tensor dresid, Recompute recompute,
                          const BlockGradStash* stash) {
  Backend& b = ctx.backend;
  const int H = ctx.n_head_local, Hkv = ctx.n_kv_head_local;
  TRAINER_CHECK(!stash || recompute == Recompute::none, "a split backward needs the saved activations");
  if (recompute == Recompute::gelu) b.swiglu_forward(a.fch_gelu, a.fch);

  // MLP: out = x2 + swiglu(fch) @ downw^T
  Tensor dout = full_grad(ctx, s, dresid);
  const Tensor dfch = stash ? stash->dfch : s.dfch, dqkv = stash ? stash->dqkv : s.dqkv;
  if (stash) keep_grad(ctx, stash->dmlp, dout);
  else b.linear_weight_backward(g.fcprojw, Tensor{}, dout, a.fch_gelu);
  b.matmul(s.dact, dout, w.fcprojw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  b.swiglu_backward(dfch, a.fch, s.dact);
  if (!stash) b.linear_weight_backward(g.fcw, Tensor{}, dfch, a.ln2);
  b.matmul(s.dln, dfch, w.fcw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  norm_backward(ctx, s, dresid, g.ln2w, Tensor{}, a.resid2, w.ln2w, Tensor{}, a.ln2_rstd);

  // Attention: x2 = x + atty @ ow^T
  dout = full_grad(ctx, s, dresid);
  if (stash) keep_grad(ctx, stash->dattn, dout);
  else b.linear_weight_backward(g.projw, Tensor{}, dout, a.atty);
  b.matmul(s.datty, dout, w.projw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  b.attention_backward(bt3(ctx, dqkv), bt3(ctx, s.datty), bt3(ctx, a.qkv), bt3(ctx, a.atty), a.lse, H, Hkv,
                       ctx.doc_start);
  b.rope_backward(bt3(ctx, dqkv), bt3(ctx, dqkv), ctx.inv_freq, H, Hkv, 0, ctx.positions);
  if (ctx.qk_norm == QkNorm::on)
    b.head_rmsnorm_backward(bt3(ctx, dqkv), g.qnormw, g.knormw, bt3(ctx, dqkv), bt3(ctx, a.qkv_raw), w.qnormw,
                            w.knormw, a.qk_rstd, H, Hkv);
  if (!stash) b.linear_weight_backward(g.qkvw, Tensor{}, dqkv, a.ln1);
  b.matmul(s.dln, dqkv, w.qkvw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  norm_backward(ctx, s, dresid, g.ln1w, Tensor{}, inp, w.ln1w, Tensor{}, a.ln1_rstd);
}

}  // namespace trainer
