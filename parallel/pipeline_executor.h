// PipelineExecutor: runs a schedule (pipeline_schedule.h) for one stage. Compute is done by
// callbacks; the executor posts receives and sends to the ring's neighbours on the pipeline's
// communicators (pipeline_links.h: the chain's, or the wrap-around's) and waits for them
// exactly when a buffer is needed or about to be reused; all per chunk, whose buffers are its
// own:
// - a forward/backward waits for its (chunk, micro-batch)'s receive;
// - forward(i) waits for send_act(i - act_send_slots) (its output buffer is reused);
// - backward(i) waits for send_grad(i - 2) (gradient send buffers alternate);
// - at the end every send is waited for.
// Messages carry message_tag's tags.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "parallel/comm.h"
#include "parallel/pipeline_links.h"
#include "parallel/pipeline_schedule.h"

namespace trainer {

struct PipelineHooks {
  std::function<void(int micro, int chunk)> forward;
  std::function<void(int micro, int chunk)> backward;
  std::function<void(int micro, int chunk)> backward_weight;  // zero_bubble's W (no messages)
  std::function<Tensor(int micro, int chunk)> recv_act_buffer;
  std::function<Tensor(int micro, int chunk)> send_act_buffer;
  std::function<Tensor(int micro, int chunk)> recv_grad_buffer;
  std::function<Tensor(int micro, int chunk)> send_grad_buffer;
  // Times the waits in the device's own queue when set: marks (EventTimer::record) before and
  // after each, read once the device has caught up. On a GPU wait() only makes the compute
  // stream wait, so the host's clock would see no time pass; the stall is what the marks
  // bracket. Null: the host's clock (a blocking wait, as MPI's).
  EventTimer* wait_timer = nullptr;
};

// The time spent waiting on messages (reported by bench as the bubble): host seconds, and,
// with a wait_timer, the marks around each wait on the device (read by total_wait_s).
struct PipelineTimes {
  double wait_s = 0;
  std::vector<std::pair<int, int>> wait_marks;
};
// wait_s plus the time between each pair of marks; waits for the device to reach the last mark
// (call it after the host has synchronized with the device anyway).
double total_wait_s(const PipelineTimes& times, EventTimer* timer);

// comms: this stage's pipeline communicators (all null with one stage; a forward-only
// schedule uses only the activations'). n_micro: the step's micro-batches (for the tags).
PipelineTimes run_pipeline(const std::vector<Action>& schedule, const PipelineComms& comms, int stage, int n_micro,
                           int act_send_slots, const PipelineHooks& hooks);

// Forward only (evaluation): recv, forward, send per (chunk, micro-batch), micro-batches in
// groups of n_stages through chunk 0 .. n_chunks-1 (the interleaved order; one chunk: one
// micro-batch after the other).
std::vector<Action> make_forward_schedule(int stage, int n_stages, int n_micro, int n_chunks);

// Opens every neighbour connection of the pipeline's communicators before the first schedule
// runs: one message each way between stages s and s+1, in chain order (activations from stage 0
// upward, then gradients from the last stage downward), then, where this stage holds the
// wrap-around communicators (a ring), the wrap-around pair (activations from the last stage to
// stage 0, then gradients back), which cannot deadlock.
// Needed by NCCL, which creates a point-to-point connection at a pair's first send/receive and
// blocks the host until the peer makes its matching call: a training schedule's first
// communication differs by stage (stage 0 posts its first gradient receive before its last
// activation send, stage 1 first receives an activation), so without this the first step
// would deadlock. Collective over the pipeline group; `send` and `recv` are one-element
// buffers where the communicators can use them (device memory for NCCL); the exchange is
// complete on return as far as the communicators' ordering goes (wait() has been called).
void connect_pipeline(const PipelineComms& comms, int stage, int n_stages, Tensor send, Tensor recv);

}  // namespace trainer
