// The pieces GptStage and GptDecoder share (see stage_parts.h).
#include "model/stage_parts.h"

#include <string>

#include "model/block_code.h"
#include "model/param_table.h"
#include "model/tp_comm.h"

namespace trainer {

BlockDims block_dims(const StageLayout& layout, int64_t B, int64_t T, int64_t rows) {
  return block_dims(layout.config(), layout.dims().tensor, B, T, rows);
}

BlockParams stage_block_params(const StageLayout& layout, const ParamStore& store, Tensor base, int unit,
                               int local_layer) {
  const GptConfig& cfg = layout.config();
  const LayerTensors tensors(store, base, unit, layer_prefix(cfg, layout.global_layer(local_layer)));
  return cfg.family().block->params(tensors, block_dims(layout, 1, 1, 1));
}

HeadParams acquire_head(const StageLayout& layout, ParamStore& store) {
  const GptConfig& cfg = layout.config();
  const int uf = layout.unit_lnf(), uw = layout.unit_head_wte();
  const char* bias_name = final_norm_bias_name(cfg);
  Tensor fbase = store.acquire(uf);
  HeadParams h;
  h.normw = store.view(fbase, uf, final_norm_weight_name(cfg));
  if (bias_name) h.normb = store.view(fbase, uf, bias_name);
  h.wte = store.view(store.acquire(uw), uw, head_name(cfg));
  return h;
}

void release_head(const StageLayout& layout, ParamStore& store) {
  store.release(layout.unit_head_wte());
  store.release(layout.unit_lnf());
}

BlockContext stage_block_context(const StageLayout& layout, Backend& backend, Comm* tp, int64_t B, int64_t T,
                                 SeqParallel sp, Tensor inv_freq) {
  const GptConfig& cfg = layout.config();
  const BlockDims w = block_dims(layout, B, T, B * T);
  return BlockContext{backend,          tp,         layout.coords().tp, int(B),   int(T),
                      int(cfg.d_model), int(w.Hl),  sp,                       w.norm,   cfg.norm_eps,
                      int(w.Hkvl),      cfg.qk_norm, inv_freq,                Tensor{}, Tensor{},
                      0};
}

std::vector<float> gather_vocab_row(const StageLayout& layout, Backend& backend, Comm* tp, Tensor local,
                                    Tensor gathered) {
  const int tp_size = layout.dims().tensor, tp_rank = layout.coords().tp;
  const int64_t Vl = local.numel();
  Tensor mine = gathered.flat(int64_t(tp_rank) * Vl, int64_t(tp_rank + 1) * Vl);
  if (local.dtype == DType::f32) backend.copy(mine.data, local.data, mine.bytes());
  else backend.cast(mine, local);
  if (tp_active(tp)) tp->all_gather(gathered, mine);
  std::vector<float> host(size_t(tp_size) * size_t(Vl));
  backend.copy_to_host(host.data(), gathered.data, gathered.bytes());
  host.resize(size_t(layout.config().vocab_size));
  return host;
}

}  // namespace trainer
