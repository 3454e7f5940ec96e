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

namespace trainer {

enum class Schedule : uint8_t { gpipe, one_f_one_b };

enum class ActionKind : uint8_t { recv_act, forward, send_act, recv_grad, backward, send_grad };

struct Action {
  ActionKind kind;
  int micro;
};

std::vector<Action> make_schedule(Schedule schedule, int stage, int n_stages, int n_micro);
// Largest number of micro-batches whose activations are alive at once on this stage.
int max_in_flight(Schedule schedule, int stage, int n_stages, int n_micro);
// Idle fraction of an ideal pipeline: (p - 1) / (m + p - 1).
double bubble_fraction(int n_stages, int n_micro);
const char* schedule_name(Schedule schedule);
std::string action_str(const Action& action);

}  // namespace trainer
