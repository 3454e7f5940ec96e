// One transformer block (pre-LayerNorm GPT-2), forward and backward, on the rank's tensor-
// parallel slice: column-parallel QKV and FC, row-parallel attention output and FC
// projection, with the f/g communication pairs of tp_comm.h.
//   x2  = x + proj(attn(ln_1(x)))       (B,T,C)
//   out = x2 + fc_proj(gelu(fc(ln_2(x2))))
// Shapes with N = B*T rows, Cl = C / tp, Hl = H / tp local heads.
#pragma once

#include "kernels/backend.h"
#include "parallel/comm.h"

namespace trainer {

enum class Recompute : uint8_t { none, gelu, block };

// Weights of one block (act dtype) or their gradients (f32), as views.
struct BlockParams {
  Tensor ln1w, ln1b;    // (C)
  Tensor qkvw, qkvb;    // (3Cl, C), (3Cl)
  Tensor projw, projb;  // (C, Cl), (C)
  Tensor ln2w, ln2b;    // (C)
  Tensor fcw, fcb;      // (4Cl, C), (4Cl)
  Tensor fcprojw, fcprojb;  // (C, 4Cl), (C)
};

// Activations saved by forward for backward.
struct BlockActs {
  Tensor ln1, ln1_mean, ln1_rstd;  // (N,C), (N), (N)
  Tensor qkv;                      // (N, 3Cl)
  Tensor atty;                     // (N, Cl)
  Tensor lse;                      // (B, Hl, T)
  Tensor resid2;                   // (N, C)
  Tensor ln2, ln2_mean, ln2_rstd;  // (N,C), (N), (N)
  Tensor fch;                      // (N, 4Cl) before GELU
  Tensor fch_gelu;                 // (N, 4Cl); a shared scratch under recompute gelu
};

// Scratch for backward, shared by all blocks.
struct BlockScratch {
  Tensor dln;    // (N, C)
  Tensor datty;  // (N, Cl)
  Tensor dfch;   // (N, 4Cl)
  Tensor dqkv;   // (N, 3Cl)
};

struct BlockContext {
  Backend& backend;
  Comm* tp;
  int tp_rank;
  int B, T, C, n_head_local;
};

void block_forward(const BlockContext& ctx, const BlockParams& w, const BlockActs& a, Tensor inp, Tensor out);
// inp (N,C): the block's input. dresid (N,C): in, the gradient of the block output; out, the
// gradient of its input.
// Parameter gradients are accumulated into g. Under Recompute::gelu, a.fch_gelu is
// recomputed from a.fch first.
void block_backward(const BlockContext& ctx, const BlockParams& w, const BlockParams& g, const BlockActs& a,
                    const BlockScratch& s, Tensor inp, Tensor dresid, Recompute recompute);

}  // namespace trainer
