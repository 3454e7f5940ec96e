// What GptStage (training, evaluation) and GptDecoder (generation) share (internal to model/):
// the blocks' local widths and activation buffers, the views of one rank's parameters as the
// blocks take them, the blocks' context and the gathering of a row of logits, so both read the
// same names, fused projections and tensor-parallel slices.
#pragma once

#include "model/gpt_block.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "model/tensor_arena.h"

namespace trainer {

// The local widths of one block's tensors (see gpt_block.h) for B x T rows, `rows` of them in
// this rank's residual stream (N, or N / tp under sequence parallelism).
struct BlockDims {
  int64_t B, T, N, rows, C, Cl, Hl, Hkvl, Ql, Fl;
  ModelArch arch;
  NormKind norm;
  QkNorm qk_norm;
};
BlockDims block_dims(const StageLayout& layout, int64_t B, int64_t T, int64_t rows);

// One block's saved activations carved from `a`.
BlockActs take_block_acts(TensorArena& a, DType act, const BlockDims& d, GeluBuffer gelu);

// The block's weights (or gradients, with a gradient base) inside an acquired unit `base`.
BlockParams stage_block_params(const StageLayout& layout, const ParamStore& store, Tensor base, int unit,
                               int local_layer);

// The head's weights, acquired (release_head pairs with acquire_head): the final norm's weight
// and bias (gpt2; undefined for llama) and the output head (Vl, C).
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
