// Pipeline schedules as data: for one stage, the ordered list of actions (receive, forward,
// send, backward) over a step's micro-batches. One executor runs any of them.
//
// Invariants (tests/parallel/test_pipeline_schedule.cpp checks them):
// - every micro-batch's forward precedes its backward on every stage;
// - a stage receives activations (stage > 0) before each forward and gradients (last stage
//   excepted) before each backward; every send has exactly one matching receive on the
//   neighbouring stage, in the same order (MPI's non-overtaking rule then pairs them);
// - a receive is posted one compute action before the compute that needs it, so the message
//   can arrive while the stage still works;
// - gpipe keeps all micro-batches' activations alive; 1f1b at most (n_stages - stage).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class Schedule : uint8_t { gpipe, one_f_one_b };
// The recipe's spelling (parallel.schedule).
inline constexpr EnumName<Schedule> kScheduleNames[] = {{Schedule::gpipe, "gpipe"},
                                                        {Schedule::one_f_one_b, "1f1b"}};
inline const char* schedule_name(Schedule schedule) { return enum_name(kScheduleNames, schedule); }

enum class ActionKind : uint8_t { recv_act, forward, send_act, recv_grad, backward, send_grad };
inline constexpr EnumName<ActionKind> kActionKindNames[] = {
    {ActionKind::recv_act, "recv_act"},   {ActionKind::forward, "forward"},
    {ActionKind::send_act, "send_act"},   {ActionKind::recv_grad, "recv_grad"},
    {ActionKind::backward, "backward"},   {ActionKind::send_grad, "send_grad"}};

struct Action {
  ActionKind kind;
  int micro;
};

std::vector<Action> make_schedule(Schedule schedule, int stage, int n_stages, int n_micro);
// Largest number of micro-batches whose activations are alive at once on this stage.
int max_in_flight(Schedule schedule, int stage, int n_stages, int n_micro);
// Idle fraction of an ideal pipeline: (p - 1) / (m + p - 1).
double bubble_fraction(int n_stages, int n_micro);
// "forward(3)": the action's kind and micro-batch.
std::string action_str(const Action& action);

}  // namespace trainer
