// Schedule generation: the compute order per stage (gpipe: all forwards then all backwards;
// 1f1b: warm-up forwards, one-forward-one-backward, cool-down backwards), then the
// communication actions placed around it.
#include "parallel/pipeline_schedule.h"

#include <algorithm>

#include "kernels/base/check.h"

namespace trainer {

namespace {

std::vector<Action> compute_order(Schedule schedule, int stage, int n_stages, int n_micro) {
  std::vector<Action> order;
  if (schedule == Schedule::gpipe) {
    for (int i = 0; i < n_micro; ++i) order.push_back({ActionKind::forward, i});
    for (int i = 0; i < n_micro; ++i) order.push_back({ActionKind::backward, i});
    return order;
  }
  int warmup = std::min(n_stages - stage - 1, n_micro);
  int next_fwd = 0, next_bwd = 0;
  for (int i = 0; i < warmup; ++i) order.push_back({ActionKind::forward, next_fwd++});
  while (next_fwd < n_micro) {
    order.push_back({ActionKind::forward, next_fwd++});
    order.push_back({ActionKind::backward, next_bwd++});
  }
  while (next_bwd < n_micro) order.push_back({ActionKind::backward, next_bwd++});
  return order;
}

}  // namespace

std::vector<Action> make_schedule(Schedule schedule, int stage, int n_stages, int n_micro) {
  TRAINER_CHECK(n_stages >= 1 && stage >= 0 && stage < n_stages && n_micro >= 1, "schedule shape");
  const bool first = stage == 0, last = stage == n_stages - 1;
  std::vector<Action> compute = compute_order(schedule, stage, n_stages, n_micro);
  // Receives are issued one compute action early: before compute[k-1] for compute[k].
  std::vector<std::vector<Action>> early(compute.size() + 1);
  for (size_t k = 0; k < compute.size(); ++k) {
    const Action& c = compute[k];
    size_t at = k == 0 ? 0 : k - 1;
    if (c.kind == ActionKind::forward && !first) early[at].push_back({ActionKind::recv_act, c.micro});
    if (c.kind == ActionKind::backward && !last) early[at].push_back({ActionKind::recv_grad, c.micro});
  }
  std::vector<Action> out;
  for (size_t k = 0; k < compute.size(); ++k) {
    for (const Action& r : early[k]) out.push_back(r);
    const Action& c = compute[k];
    out.push_back(c);
    if (c.kind == ActionKind::forward && !last) out.push_back({ActionKind::send_act, c.micro});
    if (c.kind == ActionKind::backward && !first) out.push_back({ActionKind::send_grad, c.micro});
  }
  return out;
}

int max_in_flight(Schedule schedule, int stage, int n_stages, int n_micro) {
  if (schedule == Schedule::gpipe) return n_micro;
  return std::min(n_micro, n_stages - stage);
}

double bubble_fraction(int n_stages, int n_micro) {
  return double(n_stages - 1) / double(n_micro + n_stages - 1);
}

std::string action_str(const Action& a) {
  return std::string(enum_name(kActionKindNames, a.kind)) + "(" + std::to_string(a.micro) + ")";
}

}  // namespace trainer
