// Pipeline schedules as data: for one stage, the ordered list of actions (receive, forward,
// send, backward) over a step's micro-batches and the stage's model chunks. One executor runs
// any of them.
//
// Stages and chunks: with v virtual stages (interleaved only; v = 1 otherwise) the model's
// layers split into v * p virtual stages; rank r holds chunks c = 0 .. v-1, chunk c being
// virtual stage c * p + r (Megatron-LM's layout). Activations flow from virtual stage s to
// s + 1, so rank p-1's chunk c feeds rank 0's chunk c + 1: the pipeline is a ring.
//
// Invariants (tests/parallel/test_pipeline_schedule.cpp checks them):
// - every (chunk, micro-batch)'s forward precedes its backward; per chunk, forwards and
//   backwards each run in micro-batch order, so the micro-batches alive in a chunk are
//   consecutive (slot micro % max_in_flight never collides);
// - a stage receives activations (virtual stage 0 excepted) before each forward and gradients
//   (the last virtual stage excepted) before each backward; every send has exactly one
//   matching receive on the neighbouring stage, in the same order (NCCL pairs by order, MPI
//   by tag: message_tag);
// - a receive is posted one compute action before the compute that needs it, so the message
//   can arrive while the stage still works;
// - gpipe keeps all micro-batches' activations alive; 1f1b and zero_bubble at most
//   (n_stages - stage) (zero_bubble until the micro-batch's backward_weight);
//   interleaved what max_in_flight says per chunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class Schedule : uint8_t { gpipe, one_f_one_b, interleaved, zero_bubble };
// The recipe's spelling (parallel.schedule).
inline constexpr EnumName<Schedule> kScheduleNames[] = {{Schedule::gpipe, "gpipe"},
                                                        {Schedule::one_f_one_b, "1f1b"},
                                                        {Schedule::interleaved, "interleaved"},
                                                        {Schedule::zero_bubble, "zero_bubble"}};
inline const char* schedule_name(Schedule schedule) { return enum_name(kScheduleNames, schedule); }

// backward is the whole backward, or under zero_bubble only its input-gradient part (B), the
// weight gradients following in backward_weight (W).
enum class ActionKind : uint8_t { recv_act, forward, send_act, recv_grad, backward, send_grad, backward_weight };
inline constexpr EnumName<ActionKind> kActionKindNames[] = {
    {ActionKind::recv_act, "recv_act"},   {ActionKind::forward, "forward"},
    {ActionKind::send_act, "send_act"},   {ActionKind::recv_grad, "recv_grad"},
    {ActionKind::backward, "backward"},   {ActionKind::send_grad, "send_grad"},
    {ActionKind::backward_weight, "backward_weight"}};
inline bool is_compute(ActionKind k) {
  return k == ActionKind::forward || k == ActionKind::backward || k == ActionKind::backward_weight;
}

struct Action {
  ActionKind kind;
  int micro;
  int chunk;  // model chunk on this stage (0 without virtual stages)
};

// The shape of a pipelined step.
struct PipeShape {
  Schedule schedule = Schedule::one_f_one_b;
  int n_stages = 1;
  int n_micro = 1;
  int n_chunks = 1;  // virtual stages per rank (parallel.virtual_stages)
};

// Throws unless the shape is one the schedule can run: interleaved needs 2 or more stages and
// chunks and micro-batches in multiples of the stages (see interleaved_order); the others
// exactly one chunk.
// Whether the schedule splits backward into backward and backward_weight (zero_bubble).
inline bool splits_backward(Schedule s) { return s == Schedule::zero_bubble; }
void check_pipe_shape(const PipeShape& shape);
std::vector<Action> make_schedule(const PipeShape& shape, int stage);
// Largest number of micro-batches whose activations are alive at once in any one chunk of
// this stage (each chunk keeps that many activation slots): from forward to backward, or to
// backward_weight where backward is split.
int max_in_flight(const PipeShape& shape, int stage);
// Idle fraction of an ideal pipeline: (p - 1) / (v * m + p - 1) (v = 1 for gpipe and 1f1b);
// zero_bubble's from its unit-time pass (pipeline_zero_bubble.h).
double bubble_fraction(const PipeShape& shape);
// Point-to-point tag of a message action on `stage`: the sender and the receiver of one
// message compute the same tag, distinct from every other message of the step on that link.
int message_tag(const Action& action, int stage, int n_micro);
// Neighbour stages on the ring: where activations go and come from (gradients the reverse).
inline int next_stage(int stage, int n_stages) { return (stage + 1) % n_stages; }
inline int prev_stage(int stage, int n_stages) { return (stage + n_stages - 1) % n_stages; }
// "forward(3)", or "forward(3, chunk 1)" on a chunk past the first.
std::string action_str(const Action& action);

}  // namespace trainer
