// The search's activation formula (see plan_activation.h); the order of the terms follows
// GptStage::Impl::plan() so the two can be read side by side.
#include "app/plan/plan_activation.h"

#include <algorithm>

namespace trainer {

namespace {

// Bytes of one arena tensor: TensorArena starts every tensor on a 64-byte boundary, so a
// sequence of takes occupies the sum of the rounded sizes.
int64_t arena(int64_t elements, int64_t elem_bytes) { return (elements * elem_bytes + 63) / 64 * 64; }

// The local widths GptStage's BlockDims holds.
struct Widths {
  int64_t Cl, Hl, Hkvl, Ql, Fl, fc, stats;  // fc: the MLP's first product; stats: norm vectors per row
  bool llama;
};

Widths widths(const ActivationDims& d) {
  Widths w;
  w.llama = d.arch == ModelArch::llama;
  w.Cl = d.d_model / d.tp;
  w.Hl = d.n_head / d.tp;
  w.Hkvl = (w.llama ? d.n_kv_head : d.n_head) / d.tp;
  w.Ql = (w.Hl + 2 * w.Hkvl) * (d.d_model / d.n_head);
  w.Fl = (w.llama ? d.mlp_dim : 4 * d.d_model) / d.tp;
  w.fc = w.llama ? 2 * w.Fl : w.Fl;
  w.stats = w.llama ? 1 : 2;  // RMSNorm keeps rstd only, LayerNorm mean and rstd
  return w;
}

// take_block_acts(): the activations one block saves for its backward.
int64_t block_acts(const ActivationDims& d, GeluBuffer gelu) {
  const int64_t N = d.micro_batch * d.seq_len, Nr = d.residual_rows(), C = d.d_model;
  const Widths w = widths(d);
  const int64_t a = d.act_bytes;
  int64_t b = arena(N * C, a) + w.stats * arena(Nr, 4);  // ln1 (gathered), its statistics
  if (d.qk_norm == QkNorm::on) b += arena(N * w.Ql, a) + arena(N * (w.Hl + w.Hkvl), 4);  // qkv_raw, qk_rstd
  b += arena(N * w.Ql, a);                               // qkv
  b += arena(N * w.Cl, a);                               // atty
  b += arena(d.micro_batch * w.Hl * d.seq_len, 4);       // lse
  b += arena(Nr * C, a);                                 // resid2
  b += arena(N * C, a) + w.stats * arena(Nr, 4);         // ln2 (gathered), its statistics
  b += arena(N * w.fc, a);                               // fch
  if (gelu == GeluBuffer::own) b += arena(N * w.Fl, a);  // fch_gelu
  return b;
}

}  // namespace

ActivationMemory plan_activations(const ActivationDims& d, int64_t slots) {
  const int64_t N = d.micro_batch * d.seq_len, Nr = d.residual_rows(), C = d.d_model, Vl = d.padded_vocab / d.tp;
  const Widths w = widths(d);
  const bool sp = Nr != N;
  const int64_t a = d.act_bytes;
  ActivationMemory p;
  p.slots = slots;

  // dresid, (llama: rope's inv_freq,) then BlockScratch: dln, datty, dfch, (llama: dact,) dqkv
  // (and under sequence parallelism row_out, d_full, dln_local).
  p.backward_scratch = arena(Nr * C, a) + arena(N * C, a) + arena(N * w.Cl, a) + arena(N * w.fc, a) +
                       arena(N * w.Ql, a);
  if (w.llama) p.backward_scratch += arena(d.d_model / d.n_head / 2, 4) + arena(N * w.Fl, a);
  if (sp) p.backward_scratch += 2 * arena(N * C, a) + arena(Nr * C, a);
  if (d.recompute == Recompute::gelu) p.recompute_scratch = arena(N * w.Fl, a);
  if (d.recompute == Recompute::block) p.recompute_scratch = block_acts(d, GeluBuffer::own);
  if (d.last) {
    // lnf, lnf_mean, lnf_rstd, logits, maxes, sumexp_tl, losses, loss_acc, dlnf, (dlnf_local,)
    // row_f32.
    p.head_scratch = arena(N * C, a) + w.stats * arena(Nr, 4) + arena(N * Vl, a) + arena(N, 4) + arena(2 * N, 4) +
                     2 * arena(N, 4) + arena(N * C, a) + arena(int64_t(d.tp) * Vl, 4);
    if (sp) p.head_scratch += arena(Nr * C, a);
  }
  const int64_t p2p_one = arena(Nr * C, a);
  const std::vector<int> chunks = d.chunk_layers.empty() ? std::vector<int>{d.n_layers} : d.chunk_layers;
  const int v = int(chunks.size());
  p.slots = slots * v;
  p.per_slot = 0;
  for (int c = 0; c < v; ++c) {
    const bool first = d.first && c == 0, last = d.last && c == v - 1;
    p.p2p += 2 * ((first ? 0 : 2) + (last ? 0 : 1)) * p2p_one;  // recv_act, send_grad; recv_grad
    // Slot: tokens, targets, L+1 residual streams, per-block activations, the head's gradient.
    const int64_t L = chunks[size_t(c)];
    int64_t slot = 2 * arena(N, 4) + (L + 1) * arena(Nr * C, a);
    if (d.recompute != Recompute::block)
      slot += L * block_acts(d, d.recompute == Recompute::none ? GeluBuffer::own : GeluBuffer::shared);
    // The split backward's stash: dmlp, dfch, dattn, dqkv.
    if (d.stash_weight_grads) slot += L * (2 * arena(N * C, a) + arena(N * w.fc, a) + arena(N * w.Ql, a));
    if (last) slot += arena(Nr * C, a);
    p.per_slot = std::max(p.per_slot, slot);
  }
  return p;
}

}  // namespace trainer
