// The layout search's closed form of one rank's activation memory: the buffers GptStage carves
// in its plan() (model/gpt_stage.cpp), each rounded up to TensorArena's 64 bytes. A block's
// buffers (saved activations, gradient scratch, stash, rope's frequencies, norm statistics)
// are measured with the functions GptStage carves them with (model/block_buffers.h), so they
// follow the family's description; the stage's own buffers are summed here. The exact figures
// come from GptStage itself (plan_dry_run.h); test_plan_memory.cpp checks this against them for
// every layout of small worlds.
//
// Per in-flight micro-batch (slot): tokens and targets (B,T) i32, the stage input and every
// block output (L+1 x (N,C)), the saved activations of every block (none under recompute
// block; without the GELU output under recompute gelu) and, on the last stage, the head's
// gradient (N,C). Shared scratch: backward scratch, the recompute buffers, the last stage's
// head (final LayerNorm, the (N, V/tp) logits, cross-entropy statistics, a (V) f32 row) and
// the pipeline's double-buffered point-to-point buffers. With virtual stages every chunk has its
// own slots and point-to-point buffers, each slot the size of the largest chunk's.
#pragma once

#include <cstdint>
#include <vector>

#include "model/gpt_block.h"
#include "model/gpt_config.h"
#include "model/gpt_stage.h"

namespace trainer {

struct ActivationDims {
  int64_t micro_batch = 1;  // B
  int64_t seq_len = 1;      // T
  GptConfig model;  // its shape and family (C, heads, the padded vocabulary, the MLP)
  int tp = 1;
  int n_layers = 1;  // layers of this stage (one chunk)
  std::vector<int> chunk_layers;  // layers per chunk with virtual stages (then n_layers is unused)
  bool first = true, last = true;  // this rank embeds (chunk 0) / holds the head (its last chunk)
  Recompute recompute = Recompute::none;
  bool stash_weight_grads = false;  // zero_bubble's split backward: a BlockGradStash per block and slot
  bool sequence_parallel = false;  // residual rows split over the tensor group
  int64_t act_bytes = 4;  // bytes of the activation dtype

  // Rows of the residual stream on a rank: B*T, or B*T / tp under sequence parallelism.
  int64_t residual_rows() const {
    const int64_t n = micro_batch * seq_len;
    return sequence_parallel ? n / tp : n;
  }
};

// slots: per chunk (the stage keeps that many for each of its chunks).
ActivationMemory plan_activations(const ActivationDims& dims, int64_t slots);

}  // namespace trainer
