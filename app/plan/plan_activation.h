// Activation memory of one rank, as a formula: the buffers GptStage carves in its plan()
// (model/gpt_stage.cpp), tensor by tensor, each rounded up to TensorArena's 64 bytes. GptStage
// does not expose its planning as a function (it carves through a Backend), so this is the one
// place the formula lives for `trainer plan`; tests/app/mpi_plan_memory.cpp checks it against
// GptStage::activation_memory() of a running trainer, and any change to GptStage's buffers
// must be mirrored here.
//
// Per in-flight micro-batch (slot): tokens and targets (B,T) i32, the stage input and every
// block output (L+1 x (N,C)), the saved activations of every block (none under recompute
// block; without the GELU output under recompute gelu) and, on the last stage, the head's
// gradient (N,C). Shared scratch: backward scratch, the recompute buffers, the last stage's
// head (final LayerNorm, the (N, V/tp) logits, cross-entropy statistics, a (V) f32 row) and
// the pipeline's double-buffered point-to-point buffers.
#pragma once

#include <cstdint>

#include "model/gpt_block.h"

namespace trainer {

struct ActivationDims {
  int64_t micro_batch = 1;  // B
  int64_t seq_len = 1;      // T
  int64_t d_model = 1;      // C
  int64_t n_head = 1;
  int64_t padded_vocab = 1;
  int tp = 1;
  int n_layers = 1;  // layers of this stage
  bool first = true, last = true;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;  // residual rows split over the tensor group (tp > 1)
  int64_t act_bytes = 4;  // bytes of the activation dtype

  // Rows of the residual stream on a rank: B*T, or B*T / tp under sequence parallelism.
  int64_t residual_rows() const {
    const int64_t n = micro_batch * seq_len;
    return sequence_parallel && tp > 1 ? n / tp : n;
  }
};

struct ActivationPlan {
  int64_t per_slot = 0;           // saved per in-flight micro-batch
  int64_t slots = 1;              // micro-batches alive at once
  int64_t backward_scratch = 0;   // gradient scratch shared by all blocks
  int64_t recompute_scratch = 0;  // GELU output or one block's activations, rebuilt in backward
  int64_t head_scratch = 0;       // last stage: final norm, logits (N, V/tp), loss statistics
  int64_t p2p = 0;                // pipeline send/receive buffers (2 of each kind)
  int64_t scratch() const { return backward_scratch + recompute_scratch + head_scratch + p2p; }
  // Everything GptStage allocates (what its activation_memory().total() reports).
  int64_t total() const { return per_slot * slots + scratch(); }
  // Without the point-to-point buffers (those count as communication buffers in a plan).
  int64_t activations() const { return total() - p2p; }
};

ActivationPlan plan_activations(const ActivationDims& dims, int64_t slots);

}  // namespace trainer
