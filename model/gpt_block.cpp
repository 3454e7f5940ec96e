// Transformer block forward and backward (see gpt_block.h). Without sequence parallelism the
// residual stream is whole on every tensor rank (f/g = identity/all-reduce pairs); with it,
// each rank holds its N/tp rows and the pairs are all-gather/reduce-scatter (tp_comm.h).
#include "model/gpt_block.h"

#include "model/tp_comm.h"

namespace trainer {

namespace {
constexpr Transpose N = Transpose::none;
constexpr Transpose T = Transpose::transpose;

// (N, X) viewed as (B, T, X), the layout attention takes.
Tensor bt3(const BlockContext& ctx, Tensor x) { return x.view({ctx.B, ctx.T, x.size(-1)}); }

bool seq_parallel(const BlockContext& ctx) { return ctx.sp == SeqParallel::on && tp_active(ctx.tp); }

// LayerNorm of the residual stream into `full` (N, C), the input of a column-parallel layer.
void norm_into(const BlockContext& ctx, Tensor full, Tensor mean, Tensor rstd, Tensor x, Tensor w, Tensor bias) {
  if (seq_parallel(ctx)) {
    ctx.backend.layernorm_forward(sp_rows(full, ctx.tp), mean, rstd, x, w, bias);
    sp_gather_forward(full, ctx.tp);
  } else {
    ctx.backend.layernorm_forward(full, mean, rstd, x, w, bias);
    tp_copy_forward(full, ctx.tp);
  }
}

// out (Nr, C) = the sum over the group of a row-parallel layer's product + bias (added once,
// on tensor rank 0, so the sum holds it once), then += residual.
void row_parallel_into(const BlockContext& ctx, const BlockScratch& s, Tensor out, Tensor a, Tensor w, Tensor bias,
                       Tensor residual) {
  Backend& b = ctx.backend;
  Tensor once = ctx.tp_rank == 0 ? bias : Tensor{};
  if (seq_parallel(ctx)) {
    b.matmul(s.row_out, a, w, N, T, once, Accumulate::overwrite, Tensor{});
    sp_scatter_forward(out, s.row_out, ctx.tp);
  } else {
    b.matmul(out, a, w, N, T, once, Accumulate::overwrite, Tensor{});
    tp_reduce_forward(out, ctx.tp);
  }
  b.add(out, out, residual);
}

// The gradient of a row-parallel layer's output, whole: dresid itself, or gathered.
Tensor full_grad(const BlockContext& ctx, const BlockScratch& s, Tensor dresid) {
  if (!seq_parallel(ctx)) {
    tp_reduce_backward(dresid, ctx.tp);
    return dresid;
  }
  sp_scatter_backward(s.d_full, dresid, ctx.tp);
  return s.d_full;
}

// dresid += LayerNorm backward of dln (N, C), the gradient a column-parallel layer gave back.
void norm_backward(const BlockContext& ctx, const BlockScratch& s, Tensor dresid, Tensor gw, Tensor gb, Tensor x,
                   Tensor w, Tensor mean, Tensor rstd) {
  Tensor dln = s.dln;
  if (seq_parallel(ctx)) {
    sp_gather_backward(s.dln_local, s.dln, ctx.tp);
    dln = s.dln_local;
  } else {
    tp_copy_backward(s.dln, ctx.tp);
  }
  ctx.backend.layernorm_backward(dresid, gw, gb, dln, x, w, mean, rstd, Accumulate::add);
}

}  // namespace

void block_forward(const BlockContext& ctx, const BlockParams& w, const BlockActs& a, const BlockScratch& s,
                   Tensor inp, Tensor out) {
  Backend& b = ctx.backend;
  norm_into(ctx, a.ln1, a.ln1_mean, a.ln1_rstd, inp, w.ln1w, w.ln1b);
  b.matmul(a.qkv, a.ln1, w.qkvw, N, T, w.qkvb, Accumulate::overwrite, Tensor{});
  b.attention_forward(bt3(ctx, a.atty), a.lse, bt3(ctx, a.qkv), ctx.n_head_local);
  row_parallel_into(ctx, s, a.resid2, a.atty, w.projw, w.projb, inp);

  norm_into(ctx, a.ln2, a.ln2_mean, a.ln2_rstd, a.resid2, w.ln2w, w.ln2b);
  b.matmul(a.fch, a.ln2, w.fcw, N, T, w.fcb, Accumulate::overwrite, a.fch_gelu);
  row_parallel_into(ctx, s, out, a.fch_gelu, w.fcprojw, w.fcprojb, a.resid2);
}

void block_backward(const BlockContext& ctx, const BlockParams& w, const BlockParams& g, const BlockActs& a,
                    const BlockScratch& s, Tensor inp, Tensor dresid, Recompute recompute) {
  Backend& b = ctx.backend;
  if (recompute == Recompute::gelu) b.gelu_forward(a.fch_gelu, a.fch);

  // MLP: out = x2 + fch_gelu @ fcprojw^T + fcprojb
  Tensor dout = full_grad(ctx, s, dresid);
  b.matmul(g.fcprojw, dout, a.fch_gelu, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.fcprojb, dresid);
  b.matmul(s.dfch, dout, w.fcprojw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  b.gelu_backward(s.dfch, a.fch, s.dfch);
  b.matmul(g.fcw, s.dfch, a.ln2, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.fcb, s.dfch);
  b.matmul(s.dln, s.dfch, w.fcw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  norm_backward(ctx, s, dresid, g.ln2w, g.ln2b, a.resid2, w.ln2w, a.ln2_mean, a.ln2_rstd);

  // Attention: x2 = x + atty @ projw^T + projb
  dout = full_grad(ctx, s, dresid);
  b.matmul(g.projw, dout, a.atty, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.projb, dresid);
  b.matmul(s.datty, dout, w.projw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  b.attention_backward(bt3(ctx, s.dqkv), bt3(ctx, s.datty), bt3(ctx, a.qkv), bt3(ctx, a.atty), a.lse,
                       ctx.n_head_local);
  b.matmul(g.qkvw, s.dqkv, a.ln1, T, N, Tensor{}, Accumulate::add, Tensor{});
  b.bias_backward(g.qkvb, s.dqkv);
  b.matmul(s.dln, s.dqkv, w.qkvw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  // The block input fed ln_1 and the residual: dresid already holds the residual part.
  norm_backward(ctx, s, dresid, g.ln1w, g.ln1b, inp, w.ln1w, a.ln1_mean, a.ln1_rstd);
}

}  // namespace trainer
