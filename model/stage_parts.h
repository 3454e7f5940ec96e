// What GptStage (training, evaluation) and GptDecoder (generation) share (internal to model/):
// the blocks' local widths on the layout's tensor rank, the views of one rank's parameters as
// the family's block takes them, the blocks' context and the gathering of a row of logits, so
// both read the same names, fused projections and tensor-parallel slices.
#pragma once

#include "model/block_buffers.h"
#include "model/gpt_block.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "model/tensor_arena.h"

namespace trainer {

// The block widths (block_buffers.h) on this rank of the layout's tensor group.
BlockDims block_dims(const StageLayout& layout, int64_t B, int64_t T, int64_t rows);

// The block's weights (or gradients, with a gradient base) inside an acquired unit `base`, as
// the family's block code finds them.
BlockParams stage_block_params(const StageLayout& layout, const ParamStore& store, Tensor base, int unit,
                               int local_layer);

// The head's weights, acquired (release_head pairs with acquire_head): the final norm's weight
// and bias (undefined where the family has none) and the output head (Vl, C).
struct HeadParams {
  Tensor normw, normb, wte;
};
HeadParams acquire_head(const StageLayout& layout, ParamStore& store);
void release_head(const StageLayout& layout, ParamStore& store);

// The context every block of the stage runs with, for B x T rows.
BlockContext stage_block_context(const StageLayout& layout, Backend& backend, Comm* tp, int64_t B, int64_t T,
                                 SeqParallel sp, Tensor inv_freq);

// The logits of one row over this rank's vocabulary slice, `local` (Vl) act, gathered across the
// tensor group into `gathered` (tp * Vl) f32 (collective over the group) and returned on the host
// cut to the real vocabulary.
std::vector<float> gather_vocab_row(const StageLayout& layout, Backend& backend, Comm* tp, Tensor local,
                                    Tensor gathered);

}  // namespace trainer
