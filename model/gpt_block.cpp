// GPT-2 block forward and backward (see gpt_block.h); the tensor- and sequence-parallel
// plumbing is in block_parts.
#include "model/gpt_block.h"

#include "kernels/base/check.h"
#include "model/block_parts.h"

namespace trainer {

using namespace block_parts;

namespace {

// gw += dout^T x, and gb += the column sums of bias_dout, the rows this rank's bias saw: dout
// itself (then the product carries the sums, one op) or, under sequence parallelism, its local
// part.
void weight_backward(Backend& b, Tensor gw, Tensor gb, Tensor dout, Tensor x, Tensor bias_dout) {
  if (bias_dout.data == dout.data && bias_dout.numel() == dout.numel()) return b.linear_weight_backward(gw, gb, dout, x);
  b.linear_weight_backward(gw, Tensor{}, dout, x);
  b.bias_backward(gb, bias_dout);
}

}  // namespace

void block_forward(const BlockContext& ctx, const BlockParams& w, const BlockActs& a, const BlockScratch& s,
                   Tensor inp, Tensor out) {
  Backend& b = ctx.backend;
  norm_into(ctx, a.ln1, a.ln1_mean, a.ln1_rstd, inp, w.ln1w, w.ln1b);
  b.matmul(a.qkv, a.ln1, w.qkvw, N, T, w.qkvb, Accumulate::overwrite, Tensor{});
  attend(ctx, a);
  row_parallel_into(ctx, s, a.resid2, a.atty, w.projw, w.projb, inp);

  norm_into(ctx, a.ln2, a.ln2_mean, a.ln2_rstd, a.resid2, w.ln2w, w.ln2b);
  b.matmul(a.fch, a.ln2, w.fcw, N, T, w.fcb, Accumulate::overwrite, a.fch_gelu);
  row_parallel_into(ctx, s, out, a.fch_gelu, w.fcprojw, w.fcprojb, a.resid2);
}

void block_backward(const BlockContext& ctx, const BlockParams& w, const BlockParams& g, const BlockActs& a,
                    const BlockScratch& s, Tensor inp, Tensor dresid, Recompute recompute,
                    const BlockGradStash* stash) {
  Backend& b = ctx.backend;
  TRAINER_CHECK(!stash || recompute == Recompute::none, "a split backward needs the saved activations");
  if (recompute == Recompute::gelu) b.gelu_forward(a.fch_gelu, a.fch);

  // MLP: out = x2 + fch_gelu @ fcprojw^T + fcprojb
  Tensor dout = full_grad(ctx, s, dresid);
  const Tensor dfch = stash ? stash->dfch : s.dfch, dqkv = stash ? stash->dqkv : s.dqkv;
  if (stash) {
    keep_grad(ctx, stash->dmlp, dout);
    b.bias_backward(g.fcprojb, dresid);
  } else {
    weight_backward(b, g.fcprojw, g.fcprojb, dout, a.fch_gelu, dresid);
  }
  // dfch = (dout @ fcprojw) * gelu'(fch), and fcb's gradient from it, in one op.
  b.matmul_gelu_backward(dfch, dout, w.fcprojw, N, N, a.fch, g.fcb);
  if (!stash) b.linear_weight_backward(g.fcw, Tensor{}, dfch, a.ln2);
  b.matmul(s.dln, dfch, w.fcw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  norm_backward(ctx, s, dresid, g.ln2w, g.ln2b, a.resid2, w.ln2w, a.ln2_mean, a.ln2_rstd);

  // Attention: x2 = x + atty @ projw^T + projb
  dout = full_grad(ctx, s, dresid);
  if (stash) {
    keep_grad(ctx, stash->dattn, dout);
    b.bias_backward(g.projb, dresid);
  } else {
    weight_backward(b, g.projw, g.projb, dout, a.atty, dresid);
  }
  b.matmul(s.datty, dout, w.projw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  b.attention_backward(bt3(ctx, dqkv), bt3(ctx, s.datty), bt3(ctx, a.qkv), bt3(ctx, a.atty), a.lse,
                       ctx.n_head_local, 0, ctx.doc_start);
  if (stash) b.bias_backward(g.qkvb, dqkv);
  else weight_backward(b, g.qkvw, g.qkvb, dqkv, a.ln1, dqkv);
  b.matmul(s.dln, dqkv, w.qkvw, N, N, Tensor{}, Accumulate::overwrite, Tensor{});
  // The block input fed ln_1 and the residual: dresid already holds the residual part.
  norm_backward(ctx, s, dresid, g.ln1w, g.ln1b, inp, w.ln1w, a.ln1_mean, a.ln1_rstd);
}

void block_weight_backward(const BlockContext& ctx, const BlockParams& g, const BlockActs& a,
                           const BlockGradStash& stash) {
  Backend& b = ctx.backend;
  b.linear_weight_backward(g.fcprojw, Tensor{}, stash.dmlp, a.fch_gelu);
  b.linear_weight_backward(g.fcw, Tensor{}, stash.dfch, a.ln2);
  b.linear_weight_backward(g.projw, Tensor{}, stash.dattn, a.atty);
  b.linear_weight_backward(g.qkvw, Tensor{}, stash.dqkv, a.ln1);
}

}  // namespace trainer
