// Schedule generation: the compute order per stage (gpipe: all forwards then all backwards;
// 1f1b: warm-up forwards, one-forward-one-backward, cool-down backwards; interleaved: the same
// over (chunk, micro-batch) pairs in Megatron-LM's order), then the communication actions
// placed around it.
#include "parallel/pipeline_schedule.h"

#include <algorithm>

#include "kernels/base/check.h"
#include "parallel/pipeline_zero_bubble.h"

namespace trainer {

namespace {

// Interleaved order of the k-th forward (or backward) of a stage: micro-batches go in groups of
// n_stages; each group runs through chunk 0, 1, ... v-1 for forwards and v-1 ... 0 for
// backwards before the next group starts. A full group keeps the stage busy exactly as long as
// its first micro-batch takes around the ring. Hence Megatron-LM's rule, required here too:
// micro-batches in whole groups (a multiple of the stage count). With a partial group and the
// warm-up below, some stage waits for a gradient that its neighbour computes only after a
// forward that waits on this stage (the tests found such cycles from 4 stages on).
std::vector<Action> interleaved_order(const PipeShape& s, ActionKind kind) {
  std::vector<Action> out;
  for (int g0 = 0; g0 < s.n_micro; g0 += s.n_stages) {
    const int g1 = std::min(s.n_micro, g0 + s.n_stages);
    for (int k = 0; k < s.n_chunks; ++k) {
      const int c = kind == ActionKind::forward ? k : s.n_chunks - 1 - k;
      for (int i = g0; i < g1; ++i) out.push_back({kind, i, c});
    }
  }
  return out;
}

std::vector<Action> compute_order(const PipeShape& s, int stage) {
  if (s.schedule == Schedule::zero_bubble) return zero_bubble_order(s.n_stages, s.n_micro, stage);
  std::vector<Action> order;
  if (s.schedule == Schedule::gpipe) {
    for (int i = 0; i < s.n_micro; ++i) order.push_back({ActionKind::forward, i, 0});
    for (int i = 0; i < s.n_micro; ++i) order.push_back({ActionKind::backward, i, 0});
    return order;
  }
  std::vector<Action> fwd, bwd;
  int warmup = 0;
  if (s.schedule == Schedule::interleaved) {
    fwd = interleaved_order(s, ActionKind::forward);
    bwd = interleaved_order(s, ActionKind::backward);
    // Megatron-LM's warm-up: the ring's depth in chunks, plus two per stage below the last.
    warmup = (s.n_stages - stage - 1) * 2 + (s.n_chunks - 1) * s.n_stages;
  } else {
    for (int i = 0; i < s.n_micro; ++i) fwd.push_back({ActionKind::forward, i, 0});
    for (int i = 0; i < s.n_micro; ++i) bwd.push_back({ActionKind::backward, i, 0});
    warmup = s.n_stages - stage - 1;
  }
  const int total = int(fwd.size());
  warmup = std::min(warmup, total);
  int next_fwd = 0, next_bwd = 0;
  for (int i = 0; i < warmup; ++i) order.push_back(fwd[size_t(next_fwd++)]);
  while (next_fwd < total) {
    order.push_back(fwd[size_t(next_fwd++)]);
    order.push_back(bwd[size_t(next_bwd++)]);
  }
  while (next_bwd < total) order.push_back(bwd[size_t(next_bwd++)]);
  return order;
}

}  // namespace

void check_pipe_shape(const PipeShape& s) {
  TRAINER_CHECK(s.n_stages >= 1 && s.n_micro >= 1 && s.n_chunks >= 1, "schedule shape");
  if (s.schedule == Schedule::interleaved) {
    TRAINER_CHECK(s.n_stages >= 2 && s.n_chunks >= 2, "the interleaved schedule needs 2 or more stages and chunks");
    TRAINER_CHECK(s.n_micro % s.n_stages == 0, "the interleaved schedule needs micro-batches in multiples of the "
                                               "stage count (" + std::to_string(s.n_micro) + " on " +
                                               std::to_string(s.n_stages) + " stages)");
  }
  else
    TRAINER_CHECK(s.n_chunks == 1, std::string(schedule_name(s.schedule)) + " runs one chunk per stage");
}

std::vector<Action> make_schedule(const PipeShape& shape, int stage) {
  check_pipe_shape(shape);
  TRAINER_CHECK(stage >= 0 && stage < shape.n_stages, "schedule stage");
  const int p = shape.n_stages, last_virtual = shape.n_chunks * p - 1;
  auto first_of = [&](const Action& a) { return a.chunk * p + stage == 0; };
  auto last_of = [&](const Action& a) { return a.chunk * p + stage == last_virtual; };
  std::vector<Action> compute = compute_order(shape, stage);
  // Receives are issued one compute action early: before compute[k-1] for compute[k].
  std::vector<std::vector<Action>> early(compute.size() + 1);
  for (size_t k = 0; k < compute.size(); ++k) {
    const Action& c = compute[k];
    size_t at = k == 0 ? 0 : k - 1;
    if (c.kind == ActionKind::forward && !first_of(c)) early[at].push_back({ActionKind::recv_act, c.micro, c.chunk});
    if (c.kind == ActionKind::backward && !last_of(c)) early[at].push_back({ActionKind::recv_grad, c.micro, c.chunk});
  }
  std::vector<Action> out;
  for (size_t k = 0; k < compute.size(); ++k) {
    for (const Action& r : early[k]) out.push_back(r);
    const Action& c = compute[k];
    out.push_back(c);
    if (c.kind == ActionKind::forward && !last_of(c)) out.push_back({ActionKind::send_act, c.micro, c.chunk});
    if (c.kind == ActionKind::backward && !first_of(c)) out.push_back({ActionKind::send_grad, c.micro, c.chunk});
  }
  return out;
}

int max_in_flight(const PipeShape& shape, int stage) {
  check_pipe_shape(shape);
  std::vector<int> alive(size_t(shape.n_chunks), 0);
  int peak = 0;
  const ActionKind release = splits_backward(shape.schedule) ? ActionKind::backward_weight : ActionKind::backward;
  for (const Action& a : compute_order(shape, stage)) {
    int& n = alive[size_t(a.chunk)];
    if (a.kind == ActionKind::forward) n += 1;
    if (a.kind == release) n -= 1;
    peak = std::max(peak, n);
  }
  return peak;
}

double bubble_fraction(const PipeShape& s) {
  if (s.schedule == Schedule::zero_bubble) return zero_bubble_fraction(s.n_stages, s.n_micro);
  return double(s.n_stages - 1) / double(s.n_chunks * s.n_micro + s.n_stages - 1);
}

int message_tag(const Action& a, int stage, int n_micro) {
  // A message is named by the boundary it crosses (the lower virtual stage's chunk, counted on
  // the sending side for activations and the receiving side for gradients) and its micro-batch.
  const bool wraps = stage == 0 && (a.kind == ActionKind::recv_act || a.kind == ActionKind::send_grad);
  const int boundary_chunk = a.chunk - (wraps ? 1 : 0);
  const bool grad = a.kind == ActionKind::recv_grad || a.kind == ActionKind::send_grad;
  TRAINER_CHECK(!is_compute(a.kind) && boundary_chunk >= 0,
                "message tag of " + action_str(a));
  return 2 * (boundary_chunk * n_micro + a.micro) + (grad ? 1 : 0);
}

std::string action_str(const Action& a) {
  std::string s = std::string(enum_name(kActionKindNames, a.kind)) + "(" + std::to_string(a.micro);
  if (a.chunk > 0) s += ", chunk " + std::to_string(a.chunk);
  return s + ")";
}

}  // namespace trainer
