// The buffers a block carves, for any family: its local widths on one tensor rank (BlockDims),
// the activations it saves for backward, the gradient scratch all blocks share, the split
// backward's stash and rope's frequencies. GptStage and GptDecoder carve them from their
// memory; the planner (app/plan/plan_activation.cpp) measures the same functions, so a block's
// sizes are written once.
//
// Invariant: every take_* function carves the same sequence for the same arguments, so a
// planning pass (an arena without memory, arena_bytes) gives the bytes of the real one.
#pragma once

#include <cstdint>

#include "model/gpt_block.h"
#include "model/tensor_arena.h"

namespace trainer {

// The local widths of one block's tensors (see gpt_block.h) for B x T rows, `rows` of them in
// this rank's residual stream (N, or N / tp under sequence parallelism); fc is the width of the
// MLP's first product (ModelFamily::fc_width of Fl).
struct BlockDims {
  int64_t B, T, N, rows, C, Cl, Hl, Hkvl, D, Ql, Fl, fc;
  NormKind norm;
  MlpKind mlp;
  Positions positions;
  QkNorm qk_norm;
};
BlockDims block_dims(const GptConfig& config, int tp, int64_t B, int64_t T, int64_t rows);

// A norm's statistics per row, (rows) f32: LayerNorm's mean (undefined for RMSNorm) and rstd.
struct NormStats {
  Tensor mean, rstd;
};
NormStats take_norm_stats(TensorArena& a, NormKind norm, int64_t rows);

// One block's saved activations.
BlockActs take_block_acts(TensorArena& a, DType act, const BlockDims& d, GeluBuffer gelu);
// The gradient scratch every block of a stage shares.
BlockScratch take_block_scratch(TensorArena& a, DType act, const BlockDims& d, SeqParallel sp);
// One block's stash for the split backward's weight pass.
BlockGradStash take_block_stash(TensorArena& a, DType act, const BlockDims& d);
// Rope's frequencies (D/2) f32; undefined for a family without rotary positions.
Tensor take_rope_freq(TensorArena& a, const BlockDims& d);

// The bytes `take(arena)` carves: a planning pass, no memory.
template <class Take>
int64_t arena_bytes(Take take) {
  TensorArena a(nullptr, Device::cpu);
  take(a);
  return int64_t(a.bytes());
}

}  // namespace trainer
