// GptStage implementation: activation slots, embeddings, the family's blocks and the
// vocabulary-parallel head (see gpt_stage.h).
#include "model/gpt_stage.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/base/check.h"
#include "model/block_code.h"
#include "model/block_parts.h"
#include "model/rope_freq.h"
#include "model/stage_parts.h"
#include "model/tensor_arena.h"
#include "model/tp_comm.h"

namespace trainer {

namespace {

constexpr Transpose kN = Transpose::none;
constexpr Transpose kT = Transpose::transpose;

}  // namespace

struct GptStage::Impl {
  const StageLayout& layout;
  ParamStore& store;
  Backend& backend;
  Comm* tp;
  StageOptions opt;
  DType act;
  int64_t B, T, C, N, Nr, Cl, Hl, Vl, vocab_start, valid_cols;
  BlockDims dims{};
  bool sp = false;  // sequence parallelism in effect
  int tp_rank = 0, tp_size = 1, n_chunks = 1;
  bool embeds, heads;  // this rank holds the embedding (chunk 0) / the head (its last chunk)

  struct Slot {
    Tensor tokens, targets;     // (B,T) i32
    Tensor doc_start, positions;  // (B,T) i32 with packed documents (StageOptions::documents)
    std::vector<Tensor> resid;  // L+1 x (N,C): chunk input, then each block's output
    std::vector<BlockActs> acts;
    std::vector<BlockGradStash> stash;  // split backward: each block's output gradients for W
    Tensor dhead;               // (N,C): gradient from the head (last chunk, training)
  };
  std::vector<Slot> slots;  // chunk c's slot k at c * n_slots + k
  Buffer slot_memory, scratch_memory;
  int64_t slot_bytes = 0, scratch_bytes = 0;
  ActivationMemory memory;  // what plan() carved

  Tensor dresid;  // (Nr, C)
  Tensor inv_freq;  // (D/2) f32, rotary frequencies (in the scratch memory; undefined without)
  BlockScratch bs;
  Tensor gelu_scratch;
  BlockActs recompute_acts;
  Tensor lnf, lnf_mean, lnf_rstd, logits, maxes, sumexp_tl, losses, loss_acc, dlnf, dlnf_local, row_f32;
  struct P2p {
    Tensor recv_act[2], send_grad[2], recv_grad[2];
  };
  std::vector<P2p> p2p;  // per chunk

  Impl(const StageLayout& l, ParamStore& s, Backend& b, Comm* t, const StageOptions& o)
      : layout(l), store(s), backend(b), tp(t), opt(o), act(b.act_dtype()) {
    const GptConfig& cfg = l.config();
    tp_size = l.dims().tensor;
    tp_rank = l.coords().tp;
    TRAINER_CHECK(!tp || tp->size() == tp_size, "tensor group size vs layout");
    B = o.micro_batch;
    T = o.seq_len;
    C = cfg.d_model;
    N = B * T;
    sp = o.sequence_parallel == SeqParallel::on && tp_active(tp);
    TRAINER_CHECK(o.split == BackwardSplit::whole || o.recompute == Recompute::none,
                  "a split backward needs the saved activations (recompute none)");
    TRAINER_CHECK(!sp || N % tp_size == 0, "sequence parallelism needs B*T divisible by the tensor degree");
    Nr = sp ? N / tp_size : N;
    Cl = C / tp_size;
    Hl = cfg.n_head / tp_size;
    Vl = cfg.padded_vocab / tp_size;
    vocab_start = Vl * tp_rank;
    valid_cols = std::clamp<int64_t>(cfg.vocab_size - vocab_start, 0, Vl);
    n_chunks = l.n_chunks();
    embeds = l.has_embedding();
    heads = l.has_head();
    dims = block_dims(l, B, T, Nr);
    plan(nullptr, nullptr);
    slot_memory = backend.alloc(size_t(slot_bytes) * size_t(opt.n_slots) * size_t(n_chunks));
    scratch_memory = backend.alloc(size_t(scratch_bytes));
    plan(static_cast<char*>(slot_memory.data()), static_cast<char*>(scratch_memory.data()));
    if (heads) backend.memset_zero(loss_acc.data, loss_acc.bytes());
    if (inv_freq.defined()) {
      const std::vector<float> freq = rope_inv_freq(cfg);
      backend.copy_from_host(inv_freq.data, freq.data(), inv_freq.bytes());
    }
  }

  // Carves every buffer; with null bases only measures.
  void plan(char* slot_base, char* scratch_base) {
    const Device dev = backend.device();
    TensorArena sa(scratch_base, dev);
    dresid = sa.take(act, {Nr, C});
    inv_freq = take_rope_freq(sa, dims);
    bs = take_block_scratch(sa, act, dims, sp ? SeqParallel::on : SeqParallel::off);
    memory.backward_scratch = int64_t(sa.bytes());
    if (opt.recompute == Recompute::gelu) gelu_scratch = sa.take(act, {N, dims.Fl});
    if (opt.recompute == Recompute::block) recompute_acts = take_block_acts(sa, act, dims, GeluBuffer::own);
    memory.recompute_scratch = int64_t(sa.bytes()) - memory.backward_scratch;
    if (heads) {
      lnf = sa.take(act, {N, C});
      const NormStats stats = take_norm_stats(sa, dims.norm, Nr);
      lnf_mean = stats.mean;
      lnf_rstd = stats.rstd;
      logits = sa.take(act, {N, Vl});
      maxes = sa.take(DType::f32, {N});
      sumexp_tl = sa.take(DType::f32, {2 * N});
      losses = sa.take(DType::f32, {N});
      loss_acc = sa.take(DType::f32, {N});
      dlnf = sa.take(act, {N, C});
      if (sp) dlnf_local = sa.take(act, {Nr, C});
      row_f32 = sa.take(DType::f32, {int64_t(tp_size) * Vl});
    }
    memory.head_scratch = int64_t(sa.bytes()) - memory.backward_scratch - memory.recompute_scratch;
    p2p.assign(size_t(n_chunks), P2p{});
    for (int c = 0; c < n_chunks; ++c) {
      for (int i = 0; i < 2; ++i) {
        if (!first_chunk(c)) p2p[size_t(c)].recv_act[i] = sa.take(act, {Nr, C});
        if (!first_chunk(c)) p2p[size_t(c)].send_grad[i] = sa.take(act, {Nr, C});
        if (!last_chunk(c)) p2p[size_t(c)].recv_grad[i] = sa.take(act, {Nr, C});
      }
    }
    scratch_bytes = int64_t(sa.bytes());
    memory.p2p = scratch_bytes - memory.backward_scratch - memory.recompute_scratch - memory.head_scratch;

    // Every slot is as large as the largest chunk's (the head's chunk also keeps dhead).
    const int n_all = opt.n_slots * n_chunks;
    slots.assign(size_t(n_all), Slot{});
    int64_t largest = 0;
    for (int k = 0; k < n_all; ++k) {
      const int c = k / opt.n_slots, L = layout.chunk_layers(c);
      TensorArena a(slot_base ? slot_base + size_t(k) * size_t(slot_bytes) : nullptr, dev);
      Slot& s = slots[size_t(k)];
      s.tokens = a.take(DType::i32, {B, T});
      s.targets = a.take(DType::i32, {B, T});
      if (opt.documents.masked()) s.doc_start = a.take(DType::i32, {B, T});
      if (opt.documents.resets()) s.positions = a.take(DType::i32, {B, T});
      for (int l = 0; l <= L; ++l) s.resid.push_back(a.take(act, {Nr, C}));
      if (opt.recompute != Recompute::block) {
        for (int l = 0; l < L; ++l) {
          BlockActs x =
              take_block_acts(a, act, dims, opt.recompute == Recompute::none ? GeluBuffer::own : GeluBuffer::shared);
          if (opt.recompute == Recompute::gelu) x.fch_gelu = gelu_scratch;
          s.acts.push_back(x);
        }
      }
      if (opt.split == BackwardSplit::input_then_weight)
        for (int l = 0; l < L; ++l) s.stash.push_back(take_block_stash(a, act, dims));
      if (last_chunk(c)) s.dhead = a.take(act, {Nr, C});
      largest = std::max(largest, int64_t(a.bytes()));
    }
    if (!slot_base) slot_bytes = largest;
    memory.per_slot = slot_bytes;
    memory.slots = n_all;
  }

  bool first_chunk(int c) const { return embeds && c == 0; }
  bool last_chunk(int c) const { return heads && c == n_chunks - 1; }
  Slot& slot(int micro, int chunk) {
    TRAINER_CHECK(chunk >= 0 && chunk < n_chunks, "chunk " + std::to_string(chunk));
    return slots[size_t(chunk * opt.n_slots + micro % opt.n_slots)];
  }

  BlockContext ctx() const {
    return stage_block_context(layout, backend, tp, B, T, sp ? SeqParallel::on : SeqParallel::off, inv_freq);
  }
  // The blocks' context for one micro-batch: its documents, when the options use them.
  BlockContext ctx(const Slot& s) const {
    BlockContext c = ctx();
    c.doc_start = s.doc_start;
    c.positions = s.positions;
    return c;
  }

  BlockParams block_params(Tensor base, int unit, int local_layer) {
    return stage_block_params(layout, store, base, unit, local_layer);
  }

  void block_forward_any(const Slot& s, const BlockParams& w, const BlockActs& a, Tensor inp, Tensor out) {
    layout.config().family().block->forward(ctx(s), w, a, bs, inp, out);
  }
  void block_backward_any(const Slot& s, const BlockParams& w, const BlockParams& g, const BlockActs& a, Tensor inp,
                          const BlockGradStash* stash) {
    layout.config().family().block->backward(ctx(s), w, g, a, bs, inp, dresid, opt.recompute, stash);
  }

  // The learned position table (none with rotary positions: unit -1, no tensor).
  Tensor position_table(Tensor (ParamStore::*base)(int)) {
    const int up = layout.unit_wpe();
    return up < 0 ? Tensor{} : store.view((store.*base)(up), up, layout.config().family().names.position_table);
  }

  void embed_forward(Slot& s) {
    const int uw = layout.unit_wte(), up = layout.unit_wpe();
    Tensor wte = store.view(store.acquire(uw), uw, embedding_name(layout.config()));
    Tensor wpe = position_table(&ParamStore::acquire);
    // Vocabulary-parallel rows are partial sums over the group; the position table is added on
    // tensor rank 0 only, so the sum holds it once.
    Tensor pos = tp_rank == 0 ? wpe : Tensor{};
    const Tensor rows = pos.defined() ? s.positions : Tensor{};  // which of its rows each token takes
    if (sp) {
      backend.encoder_forward(bs.row_out.view({B, T, C}), s.tokens, wte, pos, vocab_start, rows);
      sp_scatter_forward(s.resid[0], bs.row_out, tp);
    } else {
      backend.encoder_forward(s.resid[0].view({B, T, C}), s.tokens, wte, pos, vocab_start, rows);
      tp_reduce_forward(s.resid[0], tp);
    }
    if (up >= 0) store.release(up);
    store.release(uw);
  }

  void embed_backward(Slot& s) {
    const int uw = layout.unit_wte(), up = layout.unit_wpe();
    Tensor gwte = store.view(store.grads(uw), uw, embedding_name(layout.config()));
    Tensor gwpe = position_table(&ParamStore::grads);
    if (sp) {
      // The position table's gradient is taken on rank 0 only: the store sums replicated
      // gradients over the group under sequence parallelism.
      sp_scatter_backward(bs.d_full, dresid, tp);
      const Tensor pos = tp_rank == 0 ? gwpe : Tensor{};
      backend.encoder_backward(gwte, pos, bs.d_full.view({B, T, C}), s.tokens, vocab_start,
                               pos.defined() ? s.positions : Tensor{});
    } else {
      backend.encoder_backward(gwte, gwpe, dresid.view({B, T, C}), s.tokens, vocab_start,
                               gwpe.defined() ? s.positions : Tensor{});
    }
    if (up >= 0) store.grads_done(up);
    store.grads_done(uw);
  }

  void head(Slot& s, StageMode mode) {
    const GptConfig& cfg = layout.config();
    const int uf = layout.unit_lnf(), uw = layout.unit_head_wte();
    const char* bias_name = final_norm_bias_name(cfg);
    const HeadParams h = acquire_head(layout, store);
    Tensor x = s.resid.back();
    block_parts::norm_into(ctx(), lnf, lnf_mean, lnf_rstd, x, h.normw, h.normb);
    backend.matmul(logits, lnf, h.wte, kN, kT, Tensor{}, Accumulate::overwrite, Tensor{});
    // Generation reads the logits only: no loss, and none added to the step's (loss_acc).
    if (mode == StageMode::logits) return release_head(layout, store);
    Tensor targets = s.targets.view({N});
    if (tp_size == 1) {
      // The whole vocabulary here: loss and, in training, the gradient in one op.
      backend.xent_fused(losses, logits, targets, valid_cols,
                         mode == StageMode::train ? XentGrad::in_place : XentGrad::none, opt.dloss);
    } else {
      // Vocabulary-parallel cross-entropy: reduce the row max, then sum-exp and target logit.
      backend.xent_max(maxes, logits, valid_cols);
      tp->all_reduce(maxes, ReduceOp::max);
      Tensor sumexp = sumexp_tl.flat(0, N), tlogit = sumexp_tl.flat(N, 2 * N);
      backend.xent_sumexp(sumexp, tlogit, logits, maxes, targets, vocab_start, valid_cols);
      tp->all_reduce(sumexp_tl, ReduceOp::sum);
      backend.xent_loss(losses, maxes, sumexp, tlogit);
      if (mode == StageMode::train)
        backend.xent_backward(logits, logits, maxes, sumexp, targets, vocab_start, valid_cols, opt.dloss);
    }
    // Summed per row on the device; read once per step (take_loss_sum), not per micro-batch.
    backend.add(loss_acc, loss_acc, losses);
    if (mode == StageMode::train) {
      Tensor gwte = store.view(store.grads(uw), uw, head_name(cfg));
      backend.matmul(gwte, logits, lnf, kT, kN, Tensor{}, Accumulate::add, Tensor{});
      backend.matmul(dlnf, logits, h.wte, kN, kN, Tensor{}, Accumulate::overwrite, Tensor{});
      Tensor dnorm = dlnf;
      if (sp) {
        sp_gather_backward(dlnf_local, dlnf, tp);
        dnorm = dlnf_local;
      } else {
        tp_copy_backward(dlnf, tp);
      }
      Tensor gbase = store.grads(uf);
      block_parts::norm_rows_backward(ctx(), s.dhead, store.view(gbase, uf, final_norm_weight_name(cfg)),
                                      bias_name ? store.view(gbase, uf, bias_name) : Tensor{}, dnorm, x, h.normw,
                                      lnf_mean, lnf_rstd, Accumulate::overwrite);
    }
    release_head(layout, store);
  }
};

GptStage::GptStage(const StageLayout& layout, ParamStore& store, Backend& backend, Comm* tp,
                   const StageOptions& options)
    : impl_(std::make_unique<Impl>(layout, store, backend, tp, options)) {}

GptStage::~GptStage() = default;

void GptStage::set_batch(int micro, int chunk, const int32_t* tokens, const int32_t* targets) {
  Impl& m = *impl_;
  auto& s = m.slot(micro, chunk);
  m.backend.copy_from_host(s.tokens.data, tokens, s.tokens.bytes());
  m.backend.copy_from_host(s.targets.data, targets, s.targets.bytes());
  if (!m.opt.documents.any()) return;
  // Every stage has the tokens, so each finds the documents itself: nothing to send.
  std::vector<int32_t> doc_start(size_t(m.B * m.T)), positions(doc_start.size());
  document_layout(tokens, m.B, m.T, m.opt.documents, doc_start.data(), positions.data());
  if (s.doc_start.defined()) m.backend.copy_from_host(s.doc_start.data, doc_start.data(), s.doc_start.bytes());
  if (s.positions.defined()) m.backend.copy_from_host(s.positions.data, positions.data(), s.positions.bytes());
}

void GptStage::forward(int micro, int chunk, StageMode mode) {
  Impl& m = *impl_;
  auto& s = m.slot(micro, chunk);
  if (m.first_chunk(chunk)) m.embed_forward(s);
  else m.backend.copy(s.resid[0].data, m.p2p[size_t(chunk)].recv_act[micro % 2].data, s.resid[0].bytes());
  const int l0 = m.layout.chunk_first_local(chunk);
  for (int l = 0; l < m.layout.chunk_layers(chunk); ++l) {
    const int u = m.layout.unit_block(l0 + l);
    BlockParams w = m.block_params(m.store.acquire(u), u, l0 + l);
    const BlockActs& a = m.opt.recompute == Recompute::block ? m.recompute_acts : s.acts[size_t(l)];
    m.block_forward_any(s, w, a, s.resid[size_t(l)], s.resid[size_t(l) + 1]);
    m.store.release(u);
  }
  if (m.last_chunk(chunk)) m.head(s, mode);
}

void GptStage::backward(int micro, int chunk) {
  Impl& m = *impl_;
  auto& s = m.slot(micro, chunk);
  if (m.last_chunk(chunk)) {
    m.backend.copy(m.dresid.data, s.dhead.data, m.dresid.bytes());
    m.store.grads_done(m.layout.unit_lnf());
    // A tied head on a single stage is the token table, done after the embedding's backward.
    if (m.layout.unit_head_wte() != m.layout.unit_wte()) m.store.grads_done(m.layout.unit_head_wte());
  } else {
    m.backend.copy(m.dresid.data, m.p2p[size_t(chunk)].recv_grad[micro % 2].data, m.dresid.bytes());
  }
  const int l0 = m.layout.chunk_first_local(chunk);
  for (int l = m.layout.chunk_layers(chunk) - 1; l >= 0; --l) {
    const int u = m.layout.unit_block(l0 + l);
    BlockParams w = m.block_params(m.store.acquire(u), u, l0 + l);
    BlockParams g = m.block_params(m.store.grads(u), u, l0 + l);
    const BlockActs& a = m.opt.recompute == Recompute::block ? m.recompute_acts : s.acts[size_t(l)];
    // Recomputed forward writes the (already saved) block output into scratch.
    if (m.opt.recompute == Recompute::block) m.block_forward_any(s, w, a, s.resid[size_t(l)], m.bs.dln.rows(0, m.Nr));
    const bool split = m.opt.split == BackwardSplit::input_then_weight;
    m.block_backward_any(s, w, g, a, s.resid[size_t(l)], split ? &s.stash[size_t(l)] : nullptr);
    m.store.release(u);
    if (!split) m.store.grads_done(u);
  }
  if (m.first_chunk(chunk)) m.embed_backward(s);
  else m.backend.copy(m.p2p[size_t(chunk)].send_grad[micro % 2].data, m.dresid.data, m.dresid.bytes());
}

void GptStage::backward_weight(int micro, int chunk) {
  Impl& m = *impl_;
  TRAINER_CHECK(m.opt.split == BackwardSplit::input_then_weight, "backward_weight without a split backward");
  auto& s = m.slot(micro, chunk);
  const int l0 = m.layout.chunk_first_local(chunk);
  for (int l = m.layout.chunk_layers(chunk) - 1; l >= 0; --l) {
    const int u = m.layout.unit_block(l0 + l);
    block_weight_backward(m.ctx(s), m.block_params(m.store.grads(u), u, l0 + l), s.acts[size_t(l)], s.stash[size_t(l)]);
    m.store.grads_done(u);
  }
}

Tensor GptStage::recv_act_buffer(int micro, int chunk) { return impl_->p2p.at(size_t(chunk)).recv_act[micro % 2]; }
Tensor GptStage::send_act_buffer(int micro, int chunk) { return impl_->slot(micro, chunk).resid.back(); }
Tensor GptStage::recv_grad_buffer(int micro, int chunk) { return impl_->p2p.at(size_t(chunk)).recv_grad[micro % 2]; }
Tensor GptStage::send_grad_buffer(int micro, int chunk) { return impl_->p2p.at(size_t(chunk)).send_grad[micro % 2]; }

double GptStage::take_loss_sum() {
  Impl& m = *impl_;
  if (!m.heads) return 0;
  std::vector<float> host(size_t(m.N));
  m.backend.copy_to_host(host.data(), m.loss_acc.data, m.loss_acc.bytes());
  m.backend.memset_zero(m.loss_acc.data, m.loss_acc.bytes());
  double sum = 0;
  for (float v : host) sum += v;
  return sum;
}

std::vector<float> GptStage::logits_row(int b, int t) {
  Impl& m = *impl_;
  TRAINER_CHECK(m.heads, "logits_row on a stage without the head");
  const int64_t row = int64_t(b) * m.T + t;
  return gather_vocab_row(m.layout, m.backend, m.tp, m.logits.rows(row, row + 1).view({m.Vl}), m.row_f32);
}

ActivationMemory GptStage::activation_memory() const {
  return impl_->memory;
}

}  // namespace trainer
