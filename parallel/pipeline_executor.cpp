// PipelineExecutor implementation (see pipeline_executor.h).
#include "parallel/pipeline_executor.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "kernels/base/check.h"

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

void connect_pipeline(const PipelineComms& comms, int stage, int n_stages, Tensor send, Tensor recv) {
  // Each rank's first call on a communicator is the one its neighbour's first call waits for.
  if (stage > 0) comms.act->recv(recv, stage - 1, 0);
  if (stage < n_stages - 1) comms.act->send(send, stage + 1, 0);
  if (stage < n_stages - 1) comms.grad->recv(recv, stage + 1, 1);
  if (stage > 0) comms.grad->send(send, stage - 1, 1);
  // The wrap-around group holds stage 0 (rank 0) and the last stage (rank 1) exactly where the
  // layout is a ring; the chain is complete on every rank before its wrap-around call, so
  // these meet.
  TRAINER_CHECK((comms.wrap_act == nullptr) == (comms.wrap_grad == nullptr), "one wrap-around communicator of two");
  if (!comms.wrap_act) return;
  TRAINER_CHECK(stage == 0 || stage == n_stages - 1, "a wrap-around communicator on a middle stage");
  const int peer = stage == 0 ? 1 : 0;
  if (stage == n_stages - 1) comms.wrap_act->send(send, peer, 0);
  if (stage == 0) comms.wrap_act->recv(recv, peer, 0);
  if (stage == 0) comms.wrap_grad->send(send, peer, 1);
  if (stage == n_stages - 1) comms.wrap_grad->recv(recv, peer, 1);
}

PipelineTimes run_pipeline(const std::vector<Action>& schedule, const PipelineComms& comms, int stage, int n_micro,
                           int act_send_slots, const PipelineHooks& hooks) {
  PipelineTimes times;
  using Key = std::pair<int, int>;  // (chunk, micro)
  std::map<Key, CommRequestPtr> recv_act, recv_grad, send_act, send_grad;
  // Runs `wait` and counts its time on the device's queue (hooks.wait_timer) or the host's clock.
  auto timed = [&](auto&& wait) {
    if (hooks.wait_timer) {
      const int before = hooks.wait_timer->record();
      wait();
      times.wait_marks.emplace_back(before, hooks.wait_timer->record());
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    wait();
    times.wait_s += seconds_since(t0);
  };
  auto wait_for = [&](std::map<Key, CommRequestPtr>& reqs, int chunk, int micro) {
    auto it = reqs.find({chunk, micro});
    if (it == reqs.end()) return;
    timed([&] { it->second->wait(); });
    reqs.erase(it);
  };
  const int p = comms.act ? comms.act->size() : 1;
  auto route = [&](const Action& a) { return pipeline_route(comms, a.kind, stage, p); };
  for (const Action& a : schedule) {
    const Key key{a.chunk, a.micro};
    switch (a.kind) {
      case ActionKind::recv_act: {
        const PipelineRoute r = route(a);
        recv_act[key] = r.comm->recv_async(hooks.recv_act_buffer(a.micro, a.chunk), r.peer,
                                           message_tag(a, stage, n_micro));
        break;
      }
      case ActionKind::recv_grad: {
        const PipelineRoute r = route(a);
        recv_grad[key] = r.comm->recv_async(hooks.recv_grad_buffer(a.micro, a.chunk), r.peer,
                                            message_tag(a, stage, n_micro));
        break;
      }
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
      case ActionKind::send_act: {
        const PipelineRoute r = route(a);
        send_act[key] = r.comm->send_async(hooks.send_act_buffer(a.micro, a.chunk), r.peer,
                                           message_tag(a, stage, n_micro));
        break;
      }
      case ActionKind::send_grad: {
        const PipelineRoute r = route(a);
        send_grad[key] = r.comm->send_async(hooks.send_grad_buffer(a.micro, a.chunk), r.peer,
                                            message_tag(a, stage, n_micro));
        break;
      }
    }
  }
  timed([&] {
    for (auto* reqs : {&recv_act, &recv_grad, &send_act, &send_grad})
      for (auto& kv : *reqs) kv.second->wait();
  });
  return times;
}

double total_wait_s(const PipelineTimes& times, EventTimer* timer) {
  double s = times.wait_s;
  TRAINER_CHECK(timer || times.wait_marks.empty(), "pipeline wait marks without their timer");
  for (const auto& [before, after] : times.wait_marks) s += timer->seconds(before, after);
  return s;
}

}  // namespace trainer
