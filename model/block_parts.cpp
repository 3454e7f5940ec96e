// Shared block pieces (see block_parts.h). Without sequence parallelism the residual stream is
// whole on every tensor rank (f/g = identity/all-reduce pairs); with it, each rank holds its
// N/tp rows and the pairs are all-gather/reduce-scatter (tp_comm.h).
#include "model/block_parts.h"

#include "kernels/base/check.h"

#include "model/tp_comm.h"

namespace trainer::block_parts {

bool seq_parallel(const BlockContext& ctx) { return ctx.sp == SeqParallel::on && tp_active(ctx.tp); }

void attend(const BlockContext& ctx, const BlockActs& a) {
  const int H = ctx.n_head_local, Hkv = ctx.n_kv_head_local;
  if (ctx.k_cache.defined())
    ctx.backend.attention_cached(bt3(ctx, a.atty), ctx.k_cache, ctx.v_cache, bt3(ctx, a.qkv), H, Hkv, ctx.past);
  else
    ctx.backend.attention_forward(bt3(ctx, a.atty), a.lse, bt3(ctx, a.qkv), H, Hkv, ctx.doc_start);
}

void norm_rows(const BlockContext& ctx, Tensor out, Tensor mean, Tensor rstd, Tensor x, Tensor w, Tensor bias) {
  if (ctx.norm == NormKind::rmsnorm) ctx.backend.rmsnorm_forward(out, rstd, x, w, ctx.norm_eps);
  else ctx.backend.layernorm_forward(out, mean, rstd, x, w, bias);
}

void norm_rows_backward(const BlockContext& ctx, Tensor dinp, Tensor gw, Tensor gb, Tensor dout, Tensor x, Tensor w,
                        Tensor mean, Tensor rstd, Accumulate mode) {
  if (ctx.norm == NormKind::rmsnorm) ctx.backend.rmsnorm_backward(dinp, gw, dout, x, w, rstd, mode);
  else ctx.backend.layernorm_backward(dinp, gw, gb, dout, x, w, mean, rstd, mode);
}

void norm_into(const BlockContext& ctx, Tensor full, Tensor mean, Tensor rstd, Tensor x, Tensor w, Tensor bias) {
  if (seq_parallel(ctx)) {
    norm_rows(ctx, sp_rows(full, ctx.tp), mean, rstd, x, w, bias);
    sp_gather_forward(full, ctx.tp);
  } else {
    norm_rows(ctx, full, mean, rstd, x, w, bias);
    tp_copy_forward(full, ctx.tp);
  }
}

void row_parallel_into(const BlockContext& ctx, const BlockScratch& s, Tensor out, Tensor a, Tensor w, Tensor bias,
                       Tensor residual) {
  Backend& b = ctx.backend;
  if (!tp_active(ctx.tp)) {
    // No sum over a group between the product and the add: the residual rides in the product's
    // epilogue (cuBLASLt's C), so the residual stream is not read twice and written again.
    b.matmul_residual(out, a, w, N, T, bias, residual);
    return;
  }
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

Tensor full_grad(const BlockContext& ctx, const BlockScratch& s, Tensor dresid) {
  if (!seq_parallel(ctx)) {
    tp_reduce_backward(dresid, ctx.tp);
    return dresid;
  }
  sp_scatter_backward(s.d_full, dresid, ctx.tp);
  return s.d_full;
}

void keep_grad(const BlockContext& ctx, Tensor dst, Tensor grad) {
  TRAINER_CHECK(dst.numel() == grad.numel(), "kept gradient " + dst.shape_str() + " vs " + grad.shape_str());
  ctx.backend.copy(dst.data, grad.data, grad.bytes());
}

void norm_backward(const BlockContext& ctx, const BlockScratch& s, Tensor dresid, Tensor gw, Tensor gb, Tensor x,
                   Tensor w, Tensor mean, Tensor rstd) {
  Tensor dln = s.dln;
  if (seq_parallel(ctx)) {
    sp_gather_backward(s.dln_local, s.dln, ctx.tp);
    dln = s.dln_local;
  } else {
    tp_copy_backward(s.dln, ctx.tp);
  }
  norm_rows_backward(ctx, dresid, gw, gb, dln, x, w, mean, rstd, Accumulate::add);
}

}  // namespace trainer::block_parts
