// Layout search for `trainer plan --search`: every layout the trainer accepts for a world size,
// each with its memory (closed forms, no StageLayout) and modelled step time, ranked.
//
// Enumerated: tensor dividing the world, n_head and the padded vocabulary; pipeline dividing the
// rest, at most n_layer (even split); data = world / (tensor x pipeline) dividing the global
// batch; zero 0..3 (1..3 only with data > 1, where they shard something; 3 only without
// pipelining, as the trainer requires); micro-batch dividing global_batch / data; schedule
// gpipe and 1f1b when pipelined; the given recomputation modes.
// Ranked: layouts that fit first, then by modelled step time, then by memory.
#pragma once

#include <cstdint>
#include <vector>

#include "app/plan/plan_device.h"
#include "app/plan/plan_memory.h"
#include "app/plan/plan_time.h"
#include "model/gpt_config.h"

namespace trainer {

struct SearchInput {
  GptConfig config;
  int world = 1;
  int global_batch = 1;
  int seq_len = 1;
  DeviceSpec device;
  double peak_flops = 0;       // per rank
  int64_t act_bytes = 4;
  int64_t memory_limit = 0;    // per rank, bytes
  HostTransients host = HostTransients::none;  // cpu_path for --device cpu
  AttentionImpl attention = AttentionImpl::auto_detect;  // the recipe's train.attention
  DType grad_reduce_dtype = DType::f32;                  // the recipe's parallel.grad_reduce_dtype
  std::vector<Recompute> recompute = {Recompute::none, Recompute::block};
};

struct PlanCandidate {
  PlanLayout layout;
  StepEstimate time;
  int64_t largest_rank_bytes = 0;  // peak of the rank that needs the most (PlanRankMemory::peak)
  int largest_stage = 0;
  int64_t needed_bytes = 0;        // largest_rank_bytes + the device's runtime figure + attention workspace
  bool fits = false;
};

std::vector<PlanLayout> enumerate_layouts(const SearchInput& in);
// Memory and time of one layout from closed forms (stages 0, 1 and the last cover every
// stage's maximum under an even split).
PlanCandidate evaluate_layout(const SearchInput& in, const PlanLayout& layout);
// Every layout, evaluated and ranked.
std::vector<PlanCandidate> search_layouts(const SearchInput& in);

std::vector<int> divisors(int n);

}  // namespace trainer
