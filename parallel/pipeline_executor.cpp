// PipelineExecutor implementation (see pipeline_executor.h).
#include "parallel/pipeline_executor.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

namespace trainer {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::vector<Action> make_forward_schedule(int stage, int n_stages, int n_micro, int n_chunks) {
  std::vector<Action> out;
  const int last_virtual = n_chunks * n_stages - 1;
  for (int g0 = 0; g0 < n_micro; g0 += n_stages) {
    for (int c = 0; c < n_chunks; ++c) {
      for (int i = g0; i < std::min(n_micro, g0 + n_stages); ++i) {
        const int vs = c * n_stages + stage;
        if (vs > 0) out.push_back({ActionKind::recv_act, i, c});
        out.push_back({ActionKind::forward, i, c});
        if (vs < last_virtual) out.push_back({ActionKind::send_act, i, c});
      }
    }
  }
  return out;
}

void connect_pipeline(Comm& act_comm, Comm& grad_comm, int stage, int n_stages, PipelineLinks links, Tensor send,
                      Tensor recv) {
  // Each rank's first call on a communicator is the one its neighbour's first call waits for.
  if (stage > 0) act_comm.recv(recv, stage - 1, 0);
  if (stage < n_stages - 1) act_comm.send(send, stage + 1, 0);
  if (stage < n_stages - 1) grad_comm.recv(recv, stage + 1, 1);
  if (stage > 0) grad_comm.send(send, stage - 1, 1);
  if (links != PipelineLinks::ring || n_stages < 2) return;
  // The chain is complete on every rank before its wrap-around call, so these meet.
  if (stage == n_stages - 1) act_comm.send(send, 0, 0);
  if (stage == 0) act_comm.recv(recv, n_stages - 1, 0);
  if (stage == 0) grad_comm.send(send, n_stages - 1, 1);
  if (stage == n_stages - 1) grad_comm.recv(recv, 0, 1);
}

PipelineTimes run_pipeline(const std::vector<Action>& schedule, Comm* act_comm, Comm* grad_comm, int stage,
                           int n_micro, int act_send_slots, const PipelineHooks& hooks) {
  PipelineTimes times;
  using Key = std::pair<int, int>;  // (chunk, micro)
  std::map<Key, CommRequestPtr> recv_act, recv_grad, send_act, send_grad;
  auto wait_for = [&](std::map<Key, CommRequestPtr>& reqs, int chunk, int micro) {
    auto it = reqs.find({chunk, micro});
    if (it == reqs.end()) return;
    auto t0 = std::chrono::steady_clock::now();
    it->second->wait();
    times.wait_s += seconds_since(t0);
    reqs.erase(it);
  };
  const int p = act_comm ? act_comm->size() : 1;
  for (const Action& a : schedule) {
    const Key key{a.chunk, a.micro};
    switch (a.kind) {
      case ActionKind::recv_act:
        recv_act[key] = act_comm->recv_async(hooks.recv_act_buffer(a.micro, a.chunk), prev_stage(stage, p),
                                             message_tag(a, stage, n_micro));
        break;
      case ActionKind::recv_grad:
        recv_grad[key] = grad_comm->recv_async(hooks.recv_grad_buffer(a.micro, a.chunk), next_stage(stage, p),
                                               message_tag(a, stage, n_micro));
        break;
      case ActionKind::forward:
        wait_for(recv_act, a.chunk, a.micro);
        wait_for(send_act, a.chunk, a.micro - act_send_slots);
        hooks.forward(a.micro, a.chunk);
        break;
      case ActionKind::backward:
        wait_for(recv_grad, a.chunk, a.micro);
        wait_for(send_grad, a.chunk, a.micro - 2);
        hooks.backward(a.micro, a.chunk);
        break;
      case ActionKind::backward_weight:
        hooks.backward_weight(a.micro, a.chunk);
        break;
      case ActionKind::send_act:
        send_act[key] = act_comm->send_async(hooks.send_act_buffer(a.micro, a.chunk), next_stage(stage, p),
                                             message_tag(a, stage, n_micro));
        break;
      case ActionKind::send_grad:
        send_grad[key] = grad_comm->send_async(hooks.send_grad_buffer(a.micro, a.chunk), prev_stage(stage, p),
                                               message_tag(a, stage, n_micro));
        break;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  for (auto* reqs : {&recv_act, &recv_grad, &send_act, &send_grad})
    for (auto& kv : *reqs) kv.second->wait();
  times.wait_s += seconds_since(t0);
  return times;
}

}  // namespace trainer
