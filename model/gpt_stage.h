// GptStage: the part of a GPT-style model (any family, model_family.h) one rank runs — its
// pipeline stage (embeddings on stage 0, blocks, final norm and the vocabulary-parallel head,
// tied or not, on the last stage) on its tensor-parallel slice — forward and backward per
// micro-batch.
//
// Invariants:
// - The stage runs its layout's chunks (one without virtual stages): chunk 0 of stage 0 embeds,
//   the last chunk of the last stage holds the head; every other chunk receives its input and
//   sends its output. Each chunk has its own n_slots activation slots and point-to-point
//   buffers; micro-batch i of chunk c uses slot i % n_slots of c, and the caller never has more
//   than n_slots of a chunk's micro-batches between forward and backward (backward_weight
//   when split; the pipeline schedule guarantees it). A split slot also keeps each block's
//   BlockGradStash.
// - The last stage computes the loss and, in training, the head's backward right after the
//   forward (like llm.c's fused classifier): the logits (N, V/tp) exist once, never per
//   micro-batch, and no rank ever holds the full vocabulary's logits.
// - Parameter gradients accumulate in the ParamStore; each unit is reported done after the
//   micro-batch's last contribution so its reduction can start while backward continues.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "model/documents.h"
#include "model/gpt_block.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/comm.h"

namespace trainer {

// train: loss and gradients; eval: the loss (added to take_loss_sum's total); logits: the head's
// logits only (generation), no loss.
enum class StageMode : uint8_t { train, eval, logits };

// Whether backward computes the weight gradients (whole) or leaves the blocks' weight
// matrices to backward_weight (split: zero_bubble's B and W).
enum class BackwardSplit : uint8_t { whole, input_then_weight };

struct StageOptions {
  int micro_batch = 1;  // B
  int seq_len = 1;      // T
  int n_slots = 1;      // micro-batches alive at once per chunk
  Recompute recompute = Recompute::none;
  SeqParallel sequence_parallel = SeqParallel::off;  // needs B*T divisible by the tensor degree
  // Gradient of the loss per token: 1 / (tokens per step summed over data ranks).
  float dloss = 1.0f;
  BackwardSplit split = BackwardSplit::whole;  // input_then_weight needs Recompute::none
  // Packed documents: the attention mask and restarting positions (model/documents.h), taken
  // from each micro-batch's tokens in set_batch on every stage (each has the tokens).
  DocumentOptions documents;
};

struct ActivationMemory {
  int64_t per_slot = 0;           // bytes saved per in-flight micro-batch of a chunk (the largest chunk's)
  int64_t slots = 0;              // n_slots times the chunks
  // Shared buffers:
  int64_t backward_scratch = 0;   // gradient scratch shared by all blocks
  int64_t recompute_scratch = 0;  // GELU output or one block's activations, rebuilt in backward
  int64_t head_scratch = 0;       // last stage: final norm, logits (N, V/tp), loss statistics
  int64_t p2p = 0;                // pipeline send/receive buffers (2 of each kind per chunk)
  int64_t scratch() const { return backward_scratch + recompute_scratch + head_scratch + p2p; }
  int64_t total() const { return per_slot * slots + scratch(); }
  // Without the point-to-point buffers (a plan counts those as communication buffers).
  int64_t activations() const { return total() - p2p; }
};

class GptStage {
 public:
  GptStage(const StageLayout& layout, ParamStore& store, Backend& backend, Comm* tp,
           const StageOptions& options);
  ~GptStage();

  // Host tokens and targets of micro-batch `micro` for chunk `chunk`, each (B, T) int32. The
  // embedding's chunk uses the tokens, the head's the targets.
  void set_batch(int micro, int chunk, const int32_t* tokens, const int32_t* targets);
  void forward(int micro, int chunk, StageMode mode);
  // Whole, or under BackwardSplit::input_then_weight the input gradient (and the biases' and
  // norms' gradients); each block unit is then done after backward_weight.
  void backward(int micro, int chunk);
  // The blocks' weight-matrix gradients of a micro-batch whose backward ran (split only).
  void backward_weight(int micro, int chunk);

  // Point-to-point buffers for the pipeline executor: (B*T, C), or this rank's (B*T/tp, C)
  // rows under sequence parallelism.
  Tensor recv_act_buffer(int micro, int chunk);
  Tensor send_act_buffer(int micro, int chunk);
  Tensor recv_grad_buffer(int micro, int chunk);
  Tensor send_grad_buffer(int micro, int chunk);

  // Sum of per-token losses since the last call (last stage, else 0; identical on every
  // tensor rank). Synchronises with the device.
  double take_loss_sum();
  // After forward(..., StageMode::logits) on the last stage: the logits of row (b, t) over the
  // real vocabulary, gathered across the tensor group (collective over it).
  std::vector<float> logits_row(int b, int t);

  ActivationMemory activation_memory() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainer
