// Transformer block forward and backward (see gpt_block.h).
#include "model/gpt_block.h"

#include "model/tp_comm.h"

namespace trainer {

namespace {
constexpr Transpose N = Transpose::none;
constexpr Transpose T = Transpose::transpose;

// (N, X) viewed as (B, T, X), the layout attention takes.
Tensor bt3(const BlockContext& ctx, Tensor x) { return x.view({ctx.B, ctx.T, x.size(-1)}); }
}  // namespace

void block_forward(const BlockContext& ctx, const BlockParams& w, const BlockActs& a, Tensor inp, Tensor out) {
  Backend& b = ctx.backend;
  // Row-parallel biases are added once, on tensor rank 0, before the all-reduce.
  Tensor proj_bias = ctx.tp_rank == 0 ? w.projb : Tensor{};
  Tensor fcproj_bias = ctx.tp_rank == 0 ? w.fcprojb : Tensor{};

  b.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, inp, w.ln1w, w.ln1b);
  tp_copy_forward(a.ln1, ctx.tp);
  b.matmul(a.qkv, a.ln1, w.qkvw, N, T, w.qkvb, Accumulate::overwrite, Tensor{});
  b.attention_forward(bt3(ctx, a.atty), a.lse, bt3(ctx, a.qkv), ctx.n_head_local);
  b.matmul(a.resid2, a.atty, w.projw, N, T, proj_bias, Accumulate::overwrite, Tensor{});
  tp_reduce_forward(a.resid2, ctx.tp);
  b.add(a.resid2, a.resid2, inp);

  b.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.resid2, w.ln2w, w.ln2b);
  tp_copy_forward(a.ln2, ctx.tp);
  b.matmul(a.fch, a.ln2, w.fcw, N, T, w.fcb, Accumulate::overwrite, a.fch_gelu);
  b.matmul(out, a.fch_gelu, w.fcprojw, N, T, fcproj_bias, Accumulate::overwrite, Tensor{});
  tp_reduce_forward(out, ctx.tp);
  b.add(out, out, a.resid2);
}

void block_backward(const BlockContext& ctx, const BlockParams& w, const BlockParams& g, const BlockActs& a,
                    const BlockScratch& s, Tensor inp, Tensor dresid, Recompute recompute) {
  Backend& b = ctx.backend;
  if (recompute == Recompute::gelu) b.gelu_forward(a.fch_gelu, a.fch);

  // MLP: out = x2 + fch_gelu @ fcprojw^T + fcprojb
  tp_reduce_backward(dresid, ctx.tp);
  b.matmul(g.fcprojw, dresid, a.fch_gelu, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.fcprojb, dresid);
  b.matmul(s.dfch, dresid, w.fcprojw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  b.gelu_backward(s.dfch, a.fch, s.dfch);
  b.matmul(g.fcw, s.dfch, a.ln2, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.fcb, s.dfch);
  b.matmul(s.dln, s.dfch, w.fcw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  tp_copy_backward(s.dln, ctx.tp);
  b.layernorm_backward(dresid, g.ln2w, g.ln2b, s.dln, a.resid2, w.ln2w, a.ln2_mean, a.ln2_rstd, Accumulate::add);

  // Attention: x2 = x + atty @ projw^T + projb
  tp_reduce_backward(dresid, ctx.tp);
  b.matmul(g.projw, dresid, a.atty, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.projb, dresid);
  b.matmul(s.datty, dresid, w.projw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  b.attention_backward(bt3(ctx, s.dqkv), bt3(ctx, s.datty), bt3(ctx, a.qkv), bt3(ctx, a.atty), a.lse,
                       ctx.n_head_local);
  b.matmul(g.qkvw, s.dqkv, a.ln1, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.qkvb, s.dqkv);
  b.matmul(s.dln, s.dqkv, w.qkvw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  tp_copy_backward(s.dln, ctx.tp);
  // The block input fed ln_1 and the residual: dresid already holds the residual part.
  b.layernorm_backward(dresid, g.ln1w, g.ln1b, s.dln, inp, w.ln1w, a.ln1_mean, a.ln1_rstd, Accumulate::add);
}

}  // namespace trainer
