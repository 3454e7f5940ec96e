// GptDecoder implementation (see gpt_decoder.h). The memory holds the caches, two residual
// buffers of t_max rows and one block's activations for t_max rows, re-carved for the n rows of
// each call (the blocks keep nothing between layers: there is no backward).
#include "model/gpt_decoder.h"

#include <algorithm>
#include <string>

#include "kernels/base/check.h"
#include "model/block_code.h"
#include "model/block_parts.h"
#include "model/param_table.h"
#include "model/rope_freq.h"
#include "model/stage_parts.h"
#include "model/tensor_arena.h"
#include "model/tp_comm.h"

namespace trainer {

struct GptDecoder::Impl {
  const StageLayout& layout;
  ParamStore& store;
  Backend& backend;
  Comm* tp;
  int64_t t_max, past = 0, C, Vl, vocab_start;
  DType act;
  Buffer memory;
  Tensor tokens;                          // (t_max) i32
  Tensor resid[2];                        // (t_max, C): ping-pong between blocks
  Tensor act_base;                        // one block's activations for t_max rows, re-carved
  std::vector<Tensor> k_cache, v_cache;   // per local layer (1, Hkvl, t_max, D)
  Tensor inv_freq;                        // (D/2) f32, rotary positions only
  Tensor lnf, lnf_mean, lnf_rstd, logits_local, gathered;  // last stage: (1, C), (1), (1), (1, Vl), (tp*Vl)

  Impl(const StageLayout& l, ParamStore& s, Backend& b, Comm* t, int64_t tm)
      : layout(l), store(s), backend(b), tp(t), t_max(tm), act(b.act_dtype()) {
    const GptConfig& cfg = l.config();
    TRAINER_CHECK(t_max >= 1, "decoder: t_max must be >= 1");
    const int tp_size = l.dims().tensor;
    C = cfg.d_model;
    Vl = cfg.padded_vocab / tp_size;
    vocab_start = Vl * l.coords().tp;
    memory = backend.alloc(size_t(carve(nullptr)));
    carve(static_cast<char*>(memory.data()));
    if (inv_freq.defined()) {
      const std::vector<float> freq = rope_inv_freq(cfg);
      backend.copy_from_host(inv_freq.data, freq.data(), inv_freq.bytes());
    }
  }

  // Carves every buffer; with a null base only measures. Returns the bytes.
  int64_t carve(char* base) {
    const GptConfig& cfg = layout.config();
    const BlockDims d = block_dims(layout, 1, t_max, t_max);
    TensorArena a(base, backend.device());
    tokens = a.take(DType::i32, {t_max});
    for (Tensor& r : resid) r = a.take(act, {t_max, C});
    inv_freq = take_rope_freq(a, d);
    k_cache.clear();
    v_cache.clear();
    for (int l = 0; l < layout.n_layers(); ++l) {
      k_cache.push_back(a.take(act, {1, d.Hkvl, t_max, cfg.head_dim()}));
      v_cache.push_back(a.take(act, {1, d.Hkvl, t_max, cfg.head_dim()}));
    }
    if (layout.has_head()) {
      lnf = a.take(act, {1, C});
      const NormStats stats = take_norm_stats(a, d.norm, 1);
      lnf_mean = stats.mean;
      lnf_rstd = stats.rstd;
      logits_local = a.take(act, {1, Vl});
      gathered = a.take(DType::f32, {int64_t(layout.dims().tensor) * Vl});
    }
    // One block's activations last: they are re-carved for n rows at each call.
    TensorArena measure(nullptr, backend.device());
    take_block_acts(measure, act, d, GeluBuffer::own);
    act_base = a.take(DType::f32, {int64_t(measure.bytes() / sizeof(float)) + 16});
    return int64_t(a.bytes());
  }

  BlockActs acts_for(int64_t n) {
    TensorArena a(act_base.data, backend.device());
    return take_block_acts(a, act, block_dims(layout, 1, n, n), GeluBuffer::own);
  }

  void embed(Tensor out, int64_t n) {
    const int uw = layout.unit_wte(), up = layout.unit_wpe();
    const bool rank0 = layout.coords().tp == 0;
    Tensor wte = store.view(store.acquire(uw), uw, embedding_name(layout.config()));
    // The learned position table from the first new position on, added on tensor rank 0 only so
    // the sum over the group holds it once (rotary positions have none).
    Tensor wpe;
    if (up >= 0) {
      Tensor table = store.view(store.acquire(up), up, layout.config().family().names.position_table);
      if (rank0) wpe = table.rows(past, past + n);
    }
    backend.encoder_forward(out.view({1, n, C}), tokens.flat(0, n).view({1, n}), wte, wpe, vocab_start);
    tp_reduce_forward(out, tp);
    if (up >= 0) store.release(up);
    store.release(uw);
  }

  void head(Tensor x) {
    const HeadParams h = acquire_head(layout, store);
    const BlockContext ctx = stage_block_context(layout, backend, tp, 1, 1, SeqParallel::off, inv_freq);
    block_parts::norm_into(ctx, lnf, lnf_mean, lnf_rstd, x, h.normw, h.normb);
    backend.matmul(logits_local, lnf, h.wte, Transpose::none, Transpose::transpose, Tensor{}, Accumulate::overwrite,
                   Tensor{});
    release_head(layout, store);
  }

  Tensor forward(int chunk, const int32_t* host_tokens, int64_t n) {
    TRAINER_CHECK(chunk >= 0 && chunk < layout.n_chunks(), "decoder chunk " + std::to_string(chunk));
    const bool embeds = layout.has_embedding() && chunk == 0;
    const bool heads = layout.has_head() && chunk == layout.n_chunks() - 1;
    TRAINER_CHECK(n >= 1 && past + n <= t_max, "decoder: " + std::to_string(n) + " new tokens after " +
                                                   std::to_string(past) + " do not fit a cache of " +
                                                   std::to_string(t_max));
    Tensor x = resid[0].rows(0, n), y = resid[1].rows(0, n);
    if (embeds) {
      backend.copy_from_host(tokens.data, host_tokens, size_t(n) * sizeof(int32_t));
      embed(x, n);
    }
    const BlockActs a = acts_for(n);
    const BlockScratch none{};
    BlockContext ctx = stage_block_context(layout, backend, tp, 1, n, SeqParallel::off, inv_freq);
    ctx.past = past;
    const int l0 = layout.chunk_first_local(chunk);
    for (int l = l0; l < l0 + layout.chunk_layers(chunk); ++l) {
      const int u = layout.unit_block(l);
      const BlockParams w = stage_block_params(layout, store, store.acquire(u), u, l);
      ctx.k_cache = k_cache[size_t(l)];
      ctx.v_cache = v_cache[size_t(l)];
      layout.config().family().block->forward(ctx, w, a, none, x, y);
      store.release(u);
      std::swap(x, y);
    }
    if (heads) head(x.rows(n - 1, n));
    if (chunk == layout.n_chunks() - 1) past += n;
    return x;
  }
};

GptDecoder::GptDecoder(const StageLayout& layout, ParamStore& store, Backend& backend, Comm* tp, int64_t t_max)
    : impl_(std::make_unique<Impl>(layout, store, backend, tp, t_max)) {}

GptDecoder::~GptDecoder() = default;

int64_t GptDecoder::past() const { return impl_->past; }
int64_t GptDecoder::capacity() const { return impl_->t_max; }
void GptDecoder::reset() { impl_->past = 0; }
Tensor GptDecoder::input(int64_t n) { return impl_->resid[0].rows(0, n); }
Tensor GptDecoder::forward(int chunk, const int32_t* tokens, int64_t n) { return impl_->forward(chunk, tokens, n); }

std::vector<float> GptDecoder::logits() {
  Impl& m = *impl_;
  TRAINER_CHECK(m.layout.has_head(), "decoder logits on a stage without the head");
  return gather_vocab_row(m.layout, m.backend, m.tp, m.logits_local.view({m.Vl}), m.gathered);
}

}  // namespace trainer
