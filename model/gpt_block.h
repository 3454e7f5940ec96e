// One transformer block, forward and backward, on the rank's tensor-parallel slice:
// column-parallel QKV and FC, row-parallel attention output and FC projection, with the f/g
// communication pairs of tp_comm.h. Two families share the structs:
//   gpt2 (block_forward):  x2 = x + proj(attn(ln_1(x)))            (B,T,C)
//                          out = x2 + fc_proj(gelu(fc(ln_2(x2))))
//   llama (llama_block_forward, llama_block.cpp):
//                          x2 = x + o(attn(rope([qk_norm](qkv(rms_1(x))))))
//                          out = x2 + down(swiglu(gate_up(rms_2(x2))))
// Shapes with N = B*T rows, Cl = C / tp, Hl = H / tp local heads, Hkvl = Hkv / tp local k/v
// heads, D the head size, Ql = (Hl + 2 Hkvl) D the width of the local qkv, Fl the local MLP
// width (4C / tp for gpt2, ffn_dim / tp for llama), and Nr = N / tp rows of the residual
// stream under sequence parallelism (N otherwise).
#pragma once

#include "kernels/backend.h"
#include "kernels/base/enum_names.h"
#include "model/gpt_config.h"
#include "parallel/comm.h"

namespace trainer {

// Activations recomputed in backward instead of stored (train.recompute).
enum class Recompute : uint8_t { none, gelu, block };
inline constexpr EnumName<Recompute> kRecomputeNames[] = {
    {Recompute::none, "none"}, {Recompute::gelu, "gelu"}, {Recompute::block, "block"}};
inline const char* recompute_name(Recompute r) { return enum_name(kRecomputeNames, r); }
// Sequence parallelism: LayerNorms and residual adds split along the rows across the tensor
// group, with all-gather / reduce-scatter in place of the all-reduces.
enum class SeqParallel : uint8_t { off, on };

// Weights of one block (act dtype) or their gradients (f32), as views. Llama has no biases
// (undefined) and fuses its projections: qkvw spans q_proj, k_proj, v_proj and fcw spans
// gate_proj, up_proj (adjacent in the buffers, see param_table.h).
struct BlockParams {
  Tensor ln1w, ln1b;    // (C)
  Tensor qkvw, qkvb;    // (Ql, C), (Ql)
  Tensor projw, projb;  // (C, Cl), (C)
  Tensor ln2w, ln2b;    // (C)
  Tensor fcw, fcb;      // gpt2: (4Cl, C), (4Cl); llama: (2Fl, C) rows [gate | up]
  Tensor fcprojw, fcprojb;  // (C, Fl), (C)
  Tensor qnormw, knormw;    // (D): llama with qk_norm only
};

// Activations saved by forward for backward. RMSNorm keeps no mean (undefined).
struct BlockActs {
  Tensor ln1, ln1_mean, ln1_rstd;  // (N,C) (gathered under SP), (Nr), (Nr)
  Tensor qkv_raw, qk_rstd;         // qk_norm only: (N, Ql) before the norm, (N * (Hl + Hkvl))
  Tensor qkv;                      // (N, Ql), llama: after qk_norm and rope
  Tensor atty;                     // (N, Cl)
  Tensor lse;                      // (B, Hl, T)
  Tensor resid2;                   // (Nr, C)
  Tensor ln2, ln2_mean, ln2_rstd;  // (N,C) (gathered under SP), (Nr), (Nr)
  Tensor fch;                      // gpt2: (N, 4Cl) before GELU; llama: (N, 2Fl) [gate | up]
  Tensor fch_gelu;                 // (N, Fl) the activation; a shared scratch under recompute gelu
};

// Where a block's GELU output lives: a buffer of its own among the saved activations, or one
// scratch shared by every block (Recompute::gelu rebuilds it in backward).
enum class GeluBuffer : uint8_t { own, shared };

// Scratch shared by all blocks.
struct BlockScratch {
  Tensor dln;    // (N, C)
  Tensor datty;  // (N, Cl)
  Tensor dfch;   // (N, 4Cl); llama (N, 2Fl)
  Tensor dact;   // llama only: (N, Fl) the gradient of the SwiGLU output
  Tensor dqkv;   // (N, Ql)
  // Sequence parallelism only (undefined otherwise):
  Tensor row_out;    // (N, C) a row-parallel layer's partial output before its reduce-scatter
  Tensor d_full;     // (N, C) the gathered gradient of the residual stream
  Tensor dln_local;  // (Nr, C) this rank's rows of the LayerNorm output gradient
};

// The zero_bubble schedule's split backward: the output gradients that the four weight
// matrices' gradients need, kept from the input-gradient pass (B) to the weight pass (W).
struct BlockGradStash {
  Tensor dmlp;   // (N, C): gradient of the MLP's output projection (gathered under SP)
  Tensor dfch;   // (N, 4Cl) gpt2, (N, 2Fl) llama [gate | up]: gradient of fc's output
  Tensor dattn;  // (N, C): gradient of the attention projection's output (gathered under SP)
  Tensor dqkv;   // (N, Ql): gradient of qkv's output
};

struct BlockContext {
  Backend& backend;
  Comm* tp;
  int tp_rank;
  int B, T, C, n_head_local;
  SeqParallel sp = SeqParallel::off;
  // llama only:
  NormKind norm = NormKind::layernorm;
  float norm_eps = 1e-5f;
  int n_kv_head_local = 0;
  QkNorm qk_norm = QkNorm::off;
  Tensor inv_freq;  // (D/2) f32, rope's frequencies
  // Generation only (GptDecoder): this block's caches (B, Hkvl, Tmax, D) and the position of
  // the first of the T rows. With caches, attention reads and extends them (attention_cached)
  // and rope turns row t by position past + t; forward only, no lse.
  Tensor k_cache{}, v_cache{};
  int64_t past = 0;
  // Training on packed documents (model/documents.h), (B, T) i32 each, undefined when off:
  // attention sees keys from doc_start on, rope turns row t by positions[t].
  Tensor doc_start{}, positions{};
};

// inp, out (Nr, C).
void block_forward(const BlockContext& ctx, const BlockParams& w, const BlockActs& a, const BlockScratch& s,
                   Tensor inp, Tensor out);
// inp (Nr,C): the block's input. dresid (Nr,C): in, the gradient of the block output; out, the
// gradient of its input. Under sequence parallelism the gradients of the replicated
// parameters (LayerNorms, row-parallel biases) cover this rank's rows only: the caller sums
// them over the tensor group (ParamStore does, see set_tensor_partial_grads).
// Parameter gradients are accumulated into g. Under Recompute::gelu, a.fch_gelu is
// recomputed from a.fch first. With a stash (zero_bubble's B) the four weight matrices'
// gradients are left out and their output gradients kept there for block_weight_backward
// (biases and norms still get theirs); a stash needs Recompute::none, since W reads a.
void block_backward(const BlockContext& ctx, const BlockParams& w, const BlockParams& g, const BlockActs& a,
                    const BlockScratch& s, Tensor inp, Tensor dresid, Recompute recompute,
                    const BlockGradStash* stash);
// W: the four weight matrices' gradients from the stash and the saved activations, accumulated
// into g (either family: qkv, attention projection, fc, MLP projection).
void block_weight_backward(const BlockContext& ctx, const BlockParams& g, const BlockActs& a,
                           const BlockGradStash& stash);

// The same for a Llama block (llama_block.cpp); Recompute::gelu recomputes the SwiGLU output.
void llama_block_forward(const BlockContext& ctx, const BlockParams& w, const BlockActs& a, const BlockScratch& s,
                         Tensor inp, Tensor out);
void llama_block_backward(const BlockContext& ctx, const BlockParams& w, const BlockParams& g, const BlockActs& a,
                          const BlockScratch& s, Tensor inp, Tensor dresid, Recompute recompute,
                          const BlockGradStash* stash);

}  // namespace trainer
