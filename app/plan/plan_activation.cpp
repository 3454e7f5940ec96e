// The search's activation formula (see plan_activation.h); the order of the terms follows
// GptStage::Impl::plan() so the two can be read side by side.
#include "app/plan/plan_activation.h"

#include <algorithm>

#include "app/plan/plan_memory.h"
#include "model/block_buffers.h"

namespace trainer {

namespace {

// Bytes of one arena tensor: TensorArena starts every tensor on a 64-byte boundary, so a
// sequence of takes occupies the sum of the rounded sizes.
int64_t arena(int64_t elements, int64_t elem_bytes) { return (elements * elem_bytes + 63) / 64 * 64; }

}  // namespace

ActivationMemory plan_activations(const ActivationDims& d, int64_t slots) {
  const int64_t N = d.micro_batch * d.seq_len, Nr = d.residual_rows(), C = d.model.d_model,
                Vl = d.model.padded_vocab / d.tp;
  const bool sp = Nr != N;
  const int64_t a = d.act_bytes;
  const DType act = plan_act_dtype(a);
  const BlockDims w = block_dims(d.model, d.tp, d.micro_batch, d.seq_len, Nr);
  auto block_acts = [&](GeluBuffer gelu) {
    return arena_bytes([&](TensorArena& t) { take_block_acts(t, act, w, gelu); });
  };
  ActivationMemory p;
  p.slots = slots;

  // dresid, rope's frequencies, then the blocks' gradient scratch.
  p.backward_scratch = arena(Nr * C, a) + arena_bytes([&](TensorArena& t) {
                         take_rope_freq(t, w);
                         take_block_scratch(t, act, w, sp ? SeqParallel::on : SeqParallel::off);
                       });
  if (d.recompute == Recompute::gelu) p.recompute_scratch = arena(N * w.Fl, a);
  if (d.recompute == Recompute::block) p.recompute_scratch = block_acts(GeluBuffer::own);
  if (d.last) {
    // lnf, its statistics, logits, maxes, sumexp_tl, losses, loss_acc, dlnf, (dlnf_local,) row_f32.
    const int64_t stats = arena_bytes([&](TensorArena& t) { take_norm_stats(t, w.norm, Nr); });
    p.head_scratch = arena(N * C, a) + stats + arena(N * Vl, a) + arena(N, 4) + arena(2 * N, 4) + 2 * arena(N, 4) +
                     arena(N * C, a) + arena(int64_t(d.tp) * Vl, 4);
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
      slot += L * block_acts(d.recompute == Recompute::none ? GeluBuffer::own : GeluBuffer::shared);
    // The split backward's stash.
    if (d.stash_weight_grads) slot += L * arena_bytes([&](TensorArena& t) { take_block_stash(t, act, w); });
    if (last) slot += arena(Nr * C, a);
    p.per_slot = std::max(p.per_slot, slot);
  }
  return p;
}

}  // namespace trainer
