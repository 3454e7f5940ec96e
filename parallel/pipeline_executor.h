// PipelineExecutor: runs a schedule (pipeline_schedule.h) for one stage. Compute is done by
// callbacks; the executor posts receives and sends on the pipeline group and waits for them
// exactly when a buffer is needed or about to be reused:
// - a forward/backward waits for its micro-batch's receive;
// - forward(i) waits for send_act(i - act_send_slots) (its output buffer is reused);
// - backward(i) waits for send_grad(i - 2) (gradient send buffers alternate);
// - at the end every send is waited for.
// Messages carry tags (2 * micro for activations, 2 * micro + 1 for gradients).
#pragma once

#include <functional>
#include <vector>

#include "parallel/comm.h"
#include "parallel/pipeline_schedule.h"

namespace trainer {

struct PipelineHooks {
  std::function<void(int micro)> forward;
  std::function<void(int micro)> backward;
  std::function<Tensor(int micro)> recv_act_buffer;
  std::function<Tensor(int micro)> send_act_buffer;
  std::function<Tensor(int micro)> recv_grad_buffer;
  std::function<Tensor(int micro)> send_grad_buffer;
};

// Comm time is the wall time spent waiting on messages (reported by bench).
struct PipelineTimes {
  double wait_s = 0;
};

// act_comm carries activations (stage s to s+1), grad_comm gradients (s+1 to s); both span
// the pipeline group (null with one stage).
PipelineTimes run_pipeline(const std::vector<Action>& schedule, Comm* act_comm, Comm* grad_comm, int stage,
                           int act_send_slots, const PipelineHooks& hooks);

// Forward only (evaluation, sampling): recv, forward, send per micro-batch.
std::vector<Action> make_forward_schedule(int stage, int n_stages, int n_micro);

// Opens every neighbour connection of the two pipeline communicators before the first
// schedule runs: one message each way between stages s and s+1, in chain order (activations
// from stage 0 upward, then gradients from the last stage downward), which cannot deadlock.
// Needed by NCCL, which creates a point-to-point connection at a pair's first send/receive and
// blocks the host until the peer makes its matching call: a training schedule's first
// communication differs by stage (stage 0 posts its first gradient receive before its last
// activation send, stage 1 first receives an activation), so without this the first step
// would deadlock. Collective over the pipeline group; `send` and `recv` are one-element
// buffers where the communicators can use them (device memory for NCCL); the exchange is
// complete on return as far as the communicators' ordering goes (wait() has been called).
void connect_pipeline(Comm& act_comm, Comm& grad_comm, int stage, int n_stages, Tensor send, Tensor recv);

}  // namespace trainer
