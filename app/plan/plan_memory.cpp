// Shared pieces of the memory plan (see plan_memory.h).
#include "app/plan/plan_memory.h"

#include <algorithm>

namespace trainer {

PipeShape plan_pipe_shape(const PlanLayout& l) {
  if (!l.pipelined()) return PipeShape{Schedule::one_f_one_b, 1, l.grad_accum(), 1};
  return PipeShape{l.schedule, l.pipeline, l.grad_accum(), l.virtual_stages};
}

int64_t libnbc_temp_bytes(CommCall call, int64_t in_bytes, int group_size) {
  if (group_size == 1) return 0;
  if (call == CommCall::all_reduce) return in_bytes;
  if (call == CommCall::reduce_scatter) return (group_size == 2 ? 1 : 2) * in_bytes;
  return 0;
}

std::vector<int> plan_sampled_stages(const ParallelDims& dims) {
  std::vector<int> stages = {0};
  for (int s : {1, dims.pipeline - 1})
    if (s < dims.pipeline && s != stages.back()) stages.push_back(s);
  return stages;
}

PipeShape plan_replay_shape(const PipeShape& shape, int cap) {
  PipeShape s = shape;
  if (shape.schedule == Schedule::interleaved) s.n_micro = std::min(shape.n_micro, 2 * shape.n_stages);
  else if (shape.schedule == Schedule::zero_bubble) s.n_micro = std::min(shape.n_micro, 2 * shape.n_stages + 2);
  else s.n_micro = std::min(shape.n_micro, cap);
  return s;
}

int plan_slots(const PlanLayout& l, int pp_rank) { return max_in_flight(plan_pipe_shape(l), pp_rank); }

int64_t plan_attention_workspace(const GptConfig& c, const PlanLayout& l, const DeviceSpec& device,
                                 AttentionImpl attention) {
  if (!device.gpu || attention != AttentionImpl::cudnn) return 0;
  const int64_t t64 = (int64_t(l.seq_len) + 63) / 64 * 64;
  return int64_t(l.micro_batch) * (int64_t(c.n_head) / l.tensor) * t64 * t64 * 2;
}

}  // namespace trainer
