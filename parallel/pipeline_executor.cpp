// PipelineExecutor implementation (see pipeline_executor.h).
#include "parallel/pipeline_executor.h"

#include <chrono>
#include <map>

namespace trainer {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::vector<Action> make_forward_schedule(int stage, int n_stages, int n_micro) {
  std::vector<Action> out;
  for (int i = 0; i < n_micro; ++i) {
    if (stage > 0) out.push_back({ActionKind::recv_act, i});
    out.push_back({ActionKind::forward, i});
    if (stage < n_stages - 1) out.push_back({ActionKind::send_act, i});
  }
  return out;
}

void connect_pipeline(Comm& act_comm, Comm& grad_comm, int stage, int n_stages, Tensor send, Tensor recv) {
  // Each rank's first call on a communicator is the one its neighbour's first call waits for.
  if (stage > 0) act_comm.recv(recv, stage - 1, 0);
  if (stage < n_stages - 1) act_comm.send(send, stage + 1, 0);
  if (stage < n_stages - 1) grad_comm.recv(recv, stage + 1, 1);
  if (stage > 0) grad_comm.send(send, stage - 1, 1);
}

PipelineTimes run_pipeline(const std::vector<Action>& schedule, Comm* act_comm, Comm* grad_comm, int stage,
                           int act_send_slots, const PipelineHooks& hooks) {
  PipelineTimes times;
  std::map<int, CommRequestPtr> recv_act, recv_grad, send_act, send_grad;
  auto wait_for = [&](std::map<int, CommRequestPtr>& reqs, int micro) {
    auto it = reqs.find(micro);
    if (it == reqs.end()) return;
    auto t0 = std::chrono::steady_clock::now();
    it->second->wait();
    times.wait_s += seconds_since(t0);
    reqs.erase(it);
  };
  for (const Action& a : schedule) {
    switch (a.kind) {
      case ActionKind::recv_act:
        recv_act[a.micro] = act_comm->recv_async(hooks.recv_act_buffer(a.micro), stage - 1, 2 * a.micro);
        break;
      case ActionKind::recv_grad:
        recv_grad[a.micro] = grad_comm->recv_async(hooks.recv_grad_buffer(a.micro), stage + 1, 2 * a.micro + 1);
        break;
      case ActionKind::forward:
        wait_for(recv_act, a.micro);
        wait_for(send_act, a.micro - act_send_slots);
        hooks.forward(a.micro);
        break;
      case ActionKind::backward:
        wait_for(recv_grad, a.micro);
        wait_for(send_grad, a.micro - 2);
        hooks.backward(a.micro);
        break;
      case ActionKind::send_act:
        send_act[a.micro] = act_comm->send_async(hooks.send_act_buffer(a.micro), stage + 1, 2 * a.micro);
        break;
      case ActionKind::send_grad:
        send_grad[a.micro] = grad_comm->send_async(hooks.send_grad_buffer(a.micro), stage - 1, 2 * a.micro + 1);
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
