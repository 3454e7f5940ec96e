// Analytical step-time model for `trainer plan`. Every term is a documented assumption, not a
// measurement; its purpose is to rank layouts, not to promise a number.
//
// Compute: the FLOPs a rank executes (model FLOPs of its stage, flops.h's 6N + 6LTC split by
//   stage, divided by the tensor degree, plus the forward again under recompute block) run at
//   DeviceSpec::mfu of the device's peak. Backward is twice the forward.
// Tensor parallel (not overlapped; this trainer has no sequence parallelism): per micro-batch
//   and layer, 2 all-reduces of (B,T,C) activations forward and 2 backward (+2 when a block is
//   recomputed); stage 0 adds the embedding's, the last stage the head's.
// Pipeline: per micro-batch one activation in and one gradient out, (B,T,C) each, not
//   overlapped; the step takes (m + p - 1) micro-batch times of the slowest stage, the
//   (p - 1) extra being the bubble, the same for gpipe and 1f1b. Interleaved over v chunks:
//   v times the messages (the first and last stage's later chunks over their own link) and a
//   bubble of (p - 1) chunk times, 1/v of a stage's micro-batch time.
//   zero_bubble: the bubble of its unit-time pass (F = B = W), the weight passes filling
//   most of 1F1B's.
// Data parallel, as ParamStore does it under the ZeRO policy (gradients f32, parameters in the
//   act dtype): bucketed all-reduce (zero 0/1) of all gradients once per step, hidden behind
//   the last micro-batch's backward where it fits; per-unit reduce-scatter (zero 2/3) per
//   micro-batch behind that micro-batch's backward; parameters gathered after the step (zero
//   1/2) once, exposed; gathered per unit (zero 3) twice per micro-batch (forward and
//   backward), exposed.
//   The tied embedding's gradient is all-reduced between the first and last stage (exposed).
// Collectives: ring all-reduce 2(n-1)/n x bytes / bw, reduce-scatter and all-gather
//   (n-1)/n x bytes / bw, plus one latency per ring step; a group whose ranks are not all on
//   one node (rank order: tensor fastest, then data, then pipeline; DeviceSpec::ranks_per_node
//   per node) runs at the inter-node bandwidth.
// Optimizer: memory-bound AdamW plus the gradient norm, 32 bytes per owned element (+ the
//   compute copy when it is separate) at the device memory bandwidth.
#pragma once

#include "app/plan/plan_device.h"
#include "app/plan/plan_memory.h"
#include "model/gpt_config.h"

namespace trainer {

// Model FLOPs per token of one pipeline stage (all of its tensor ranks): 6 x (its parameters
// that take part in matrix products, the head's tied table on the last stage, and the final
// LayerNorm) + 6 T C per layer. Over all stages the sum is flops_per_token().
double stage_flops_per_token(const GptConfig& config, int seq_len, int n_layers, bool last);
// Extra FLOPs per token a stage executes under recompute block (one more forward of its blocks).
double stage_recompute_flops_per_token(const GptConfig& config, int seq_len, int n_layers);

struct StepEstimate {
  double forward_s = 0;    // slowest stage, all micro-batches
  double backward_s = 0;   // including the recomputed forward
  double tp_comm_s = 0;    // tensor-parallel all-reduces on the slowest stage
  double p2p_s = 0;        // pipeline sends and receives on the slowest stage
  double bubble_s = 0;     // (p - 1) micro-batch times of the slowest stage
  double dp_comm_s = 0;    // exposed data-parallel and tied-embedding communication
  double optimizer_s = 0;
  double step_s = 0;       // the sum of the above
  double comm_s() const { return tp_comm_s + p2p_s + dp_comm_s; }
  double tokens_per_s = 0;
  double mfu = 0;              // model FLOPs per second over world x peak
  double flops_per_step = 0;   // model FLOPs of the whole step (6N + 6LTC per token)
  double rank_flops = 0;       // FLOPs the busiest rank executes per step (incl. recompute)
  int slowest_stage = 0;
};

StepEstimate estimate_step(const GptConfig& config, const PlanLayout& layout, const DeviceSpec& device,
                           double peak_flops_per_rank, int64_t act_bytes);

// Whether every group of `size` ranks spaced `stride` apart (a tensor, data or pipeline group
// under the trainer's rank order) lies within one node.
bool groups_within_node(int stride, int size, int world, int ranks_per_node);
// Whether rank r and rank r + offset share a node for every r < n_first.
bool pairs_within_node(int offset, int n_first, int ranks_per_node);

}  // namespace trainer
