// The pieces every transformer block and the head share (internal to model/): the norm of the
// residual stream feeding a column-parallel layer, the row-parallel layer writing back into it
// (with Megatron's f/g pairs of tp_comm.h, or their sequence-parallel forms), and their
// gradients. The norm is the context's kind: LayerNorm (weight, bias, mean, rstd) or RMSNorm
// (weight, rstd; bias and mean undefined).
#pragma once

#include "model/gpt_block.h"

namespace trainer::block_parts {

inline constexpr Transpose N = Transpose::none;
inline constexpr Transpose T = Transpose::transpose;

// (N, X) viewed as (B, T, X), the layout attention takes.
inline Tensor bt3(const BlockContext& ctx, Tensor x) { return x.view({ctx.B, ctx.T, x.size(-1)}); }
bool seq_parallel(const BlockContext& ctx);

// a.atty = attention over a.qkv: causal over the T rows, or over the context's KV cache.
void attend(const BlockContext& ctx, const BlockActs& a);
// out = norm(x) on this rank's rows, no communication.
void norm_rows(const BlockContext& ctx, Tensor out, Tensor mean, Tensor rstd, Tensor x, Tensor w, Tensor bias);
// dinp (+)= the norm's input gradient of dout; gw (, gb) += its weight (and bias) gradients.
void norm_rows_backward(const BlockContext& ctx, Tensor dinp, Tensor gw, Tensor gb, Tensor dout, Tensor x, Tensor w,
                        Tensor mean, Tensor rstd, Accumulate mode);
// The norm of the residual stream into `full` (N, C), the whole input of a column-parallel layer.
void norm_into(const BlockContext& ctx, Tensor full, Tensor mean, Tensor rstd, Tensor x, Tensor w, Tensor bias);
// out (Nr, C) = the sum over the group of a row-parallel layer's product (+ bias, added on
// tensor rank 0 only so that the sum holds it once), then += residual. bias may be undefined.
// Without a tensor group it is one matmul with the residual in its epilogue.
void row_parallel_into(const BlockContext& ctx, const BlockScratch& s, Tensor out, Tensor a, Tensor w, Tensor bias,
                       Tensor residual);
// The gradient of a row-parallel layer's output, whole: dresid itself, or gathered.
Tensor full_grad(const BlockContext& ctx, const BlockScratch& s, Tensor dresid);
// Keeps a gradient for the weight pass: copied into dst (N, C), since dresid and the gathered
// buffer are overwritten as backward goes on.
void keep_grad(const BlockContext& ctx, Tensor dst, Tensor grad);
// dresid += the norm's backward of s.dln (N, C), the gradient a column-parallel layer gave back.
void norm_backward(const BlockContext& ctx, const BlockScratch& s, Tensor dresid, Tensor gw, Tensor gb, Tensor x,
                   Tensor w, Tensor mean, Tensor rstd);

}  // namespace trainer::block_parts
