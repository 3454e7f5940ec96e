// The search's activation formula (see plan_activation.h); the order of the terms follows
// GptStage::Impl::plan() so the two can be read side by side.
#include "app/plan/plan_activation.h"

namespace trainer {

namespace {

// Bytes of one arena tensor: TensorArena starts every tensor on a 64-byte boundary, so a
// sequence of takes occupies the sum of the rounded sizes.
int64_t arena(int64_t elements, int64_t elem_bytes) { return (elements * elem_bytes + 63) / 64 * 64; }

// take_block_acts(): the activations one block saves for its backward.
int64_t block_acts(const ActivationDims& d, GeluBuffer gelu) {
  const int64_t N = d.micro_batch * d.seq_len, Nr = d.residual_rows(), C = d.d_model, Cl = C / d.tp,
                Hl = d.n_head / d.tp;
  const int64_t a = d.act_bytes;
  int64_t b = arena(N * C, a) + 2 * arena(Nr, 4);  // ln1 (gathered), ln1_mean, ln1_rstd
  b += arena(N * 3 * Cl, a);                       // qkv
  b += arena(N * Cl, a);                           // atty
  b += arena(d.micro_batch * Hl * d.seq_len, 4);   // lse
  b += arena(Nr * C, a);                           // resid2
  b += arena(N * C, a) + 2 * arena(Nr, 4);         // ln2 (gathered), ln2_mean, ln2_rstd
  b += arena(N * 4 * Cl, a);                       // fch
  if (gelu == GeluBuffer::own) b += arena(N * 4 * Cl, a);  // fch_gelu
  return b;
}

}  // namespace

ActivationMemory plan_activations(const ActivationDims& d, int64_t slots) {
  const int64_t N = d.micro_batch * d.seq_len, Nr = d.residual_rows(), C = d.d_model, Cl = C / d.tp,
                Vl = d.padded_vocab / d.tp;
  const bool sp = Nr != N;
  const int64_t a = d.act_bytes;
  ActivationMemory p;
  p.slots = slots;

  // dresid, then BlockScratch: dln, datty, dfch, dqkv (and under sequence parallelism
  // row_out, d_full, dln_local).
  p.backward_scratch = arena(Nr * C, a) + arena(N * C, a) + arena(N * Cl, a) + arena(N * 4 * Cl, a) +
                       arena(N * 3 * Cl, a);
  if (sp) p.backward_scratch += 2 * arena(N * C, a) + arena(Nr * C, a);
  if (d.recompute == Recompute::gelu) p.recompute_scratch = arena(N * 4 * Cl, a);
  if (d.recompute == Recompute::block) p.recompute_scratch = block_acts(d, GeluBuffer::own);
  if (d.last) {
    // lnf, lnf_mean, lnf_rstd, logits, maxes, sumexp_tl, losses, loss_acc, dlnf, (dlnf_local,)
    // row_f32.
    p.head_scratch = arena(N * C, a) + 2 * arena(Nr, 4) + arena(N * Vl, a) + arena(N, 4) + arena(2 * N, 4) +
                     2 * arena(N, 4) + arena(N * C, a) + arena(int64_t(d.tp) * Vl, 4);
    if (sp) p.head_scratch += arena(Nr * C, a);
  }
  const int64_t p2p_one = arena(Nr * C, a);
  p.p2p = 2 * ((d.first ? 0 : 2) + (d.last ? 0 : 1)) * p2p_one;  // recv_act, send_grad; recv_grad

  // Slot: tokens, targets, L+1 residual streams, per-block activations, the head's gradient.
  p.per_slot = 2 * arena(N, 4) + int64_t(d.n_layers + 1) * arena(Nr * C, a);
  if (d.recompute != Recompute::block)
    p.per_slot += int64_t(d.n_layers) *
                  block_acts(d, d.recompute == Recompute::none ? GeluBuffer::own : GeluBuffer::shared);
  if (d.last) p.per_slot += arena(Nr * C, a);
  return p;
}

}  // namespace trainer
