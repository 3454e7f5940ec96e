// Pipeline schedules: ordering, pairing of messages, in-flight bounds and a deadlock-freedom
// simulation for every (schedule, stages, micro-batches) up to small sizes, also under NCCL's
// lazy point-to-point connections (with connect_pipeline first).
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/pipeline_executor.h"
#include "parallel/pipeline_schedule.h"
#include "tests/support/unused_comm.h"

using namespace trainer;

namespace {

std::vector<int> micros_of(const std::vector<Action>& s, ActionKind kind) {
  std::vector<int> out;
  for (const Action& a : s)
    if (a.kind == kind) out.push_back(a.micro);
  return out;
}

int position(const std::vector<Action>& s, ActionKind kind, int micro) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i].kind == kind && s[i].micro == micro) return int(i);
  return -1;
}

// Executes all stages in lock-free rounds: a compute action may run only when its receive's
// matching send has been issued on the neighbour. Sends never block (they are non-blocking).
bool simulate(const std::vector<std::vector<Action>>& stages) {
  const int p = int(stages.size());
  std::vector<size_t> pc(p, 0);
  auto sent = [&](int stage, ActionKind kind, int micro) {
    for (size_t i = 0; i < pc[stage]; ++i)
      if (stages[stage][i].kind == kind && stages[stage][i].micro == micro) return true;
    return false;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (pc[s] < stages[s].size()) {
        const Action& a = stages[s][pc[s]];
        if (a.kind == ActionKind::forward && s > 0 && !sent(s - 1, ActionKind::send_act, a.micro)) break;
        if (a.kind == ActionKind::backward && s < p - 1 && !sent(s + 1, ActionKind::send_grad, a.micro)) break;
        ++pc[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s)
    if (pc[s] != stages[s].size()) return false;
  return true;
}

// One step of a stage for the lazy-connection simulation: a message on communicator `comm`
// (0 activations, 1 gradients) or a compute action.
struct Step {
  bool compute = false;
  int comm = 0;
  bool send = false;
  int peer = 0;
  Action action{ActionKind::forward, 0};
};

// Records the point-to-point calls connect_pipeline makes; nothing else may be called.
class RecordingComm final : public testing::UnusedComm {
 public:
  RecordingComm(int id, int rank, int size, std::vector<Step>* log)
      : UnusedComm(rank, size, "recording"), id_(id), log_(log) {}
  void send(Tensor, int peer, int) override { log_->push_back(Step{false, id_, true, peer, {}}); }
  void recv(Tensor, int peer, int) override { log_->push_back(Step{false, id_, false, peer, {}}); }

 private:
  int id_;
  std::vector<Step>* log_;
};

std::vector<Step> steps_of(const std::vector<Action>& schedule, int stage, bool connect, int p) {
  std::vector<Step> out;
  if (connect) {
    RecordingComm act(0, stage, p, &out), grad(1, stage, p, &out);
    connect_pipeline(act, grad, stage, p, Tensor{}, Tensor{});
  }
  for (const Action& a : schedule) {
    switch (a.kind) {
      case ActionKind::recv_act: out.push_back(Step{false, 0, false, stage - 1, a}); break;
      case ActionKind::send_act: out.push_back(Step{false, 0, true, stage + 1, a}); break;
      case ActionKind::recv_grad: out.push_back(Step{false, 1, false, stage + 1, a}); break;
      case ActionKind::send_grad: out.push_back(Step{false, 1, true, stage - 1, a}); break;
      default: out.push_back(Step{true, 0, false, 0, a}); break;
    }
  }
  return out;
}

// Like simulate(), plus NCCL's lazy connections: a stage's first message with a peer on a
// communicator blocks (the host) until the peer has reached its own first message of that pair.
bool simulate_lazy_connect(const std::vector<std::vector<Step>>& stages) {
  const int p = int(stages.size());
  auto first_with = [&](int s, int comm, int peer) {
    for (size_t i = 0; i < stages[s].size(); ++i)
      if (!stages[s][i].compute && stages[s][i].comm == comm && stages[s][i].peer == peer) return i;
    return stages[s].size();
  };
  std::vector<size_t> pc(p, 0);
  auto issued = [&](int s, ActionKind kind, int micro) {
    for (size_t i = 0; i < pc[s]; ++i)
      if (!stages[s][i].compute && stages[s][i].action.kind == kind && stages[s][i].action.micro == micro) return true;
    return false;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (pc[s] < stages[s].size()) {
        const Step& st = stages[s][pc[s]];
        if (st.compute) {
          const Action& a = st.action;
          if (a.kind == ActionKind::forward && s > 0 && !issued(s - 1, ActionKind::send_act, a.micro)) break;
          if (a.kind == ActionKind::backward && s < p - 1 && !issued(s + 1, ActionKind::send_grad, a.micro)) break;
        } else if (first_with(s, st.comm, st.peer) == pc[s] && pc[st.peer] < first_with(st.peer, st.comm, s)) {
          break;
        }
        ++pc[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s)
    if (pc[s] != stages[s].size()) return false;
  return true;
}

}  // namespace

TEST_CASE("schedules do not deadlock on lazily connected NCCL pairs after connect_pipeline") {
  int deadlocks_without = 0;
  for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (int p = 2; p <= 5; ++p) {
      for (int m = 1; m <= 6; ++m) {
        CAPTURE(schedule_name(kind));
        CAPTURE(p);
        CAPTURE(m);
        std::vector<std::vector<Step>> with, without, eval;
        for (int s = 0; s < p; ++s) {
          with.push_back(steps_of(make_schedule(kind, s, p, m), s, true, p));
          without.push_back(steps_of(make_schedule(kind, s, p, m), s, false, p));
          eval.push_back(steps_of(make_forward_schedule(s, p, m), s, true, p));
        }
        CHECK(simulate_lazy_connect(with));
        CHECK(simulate_lazy_connect(eval));
        if (!simulate_lazy_connect(without)) ++deadlocks_without;
      }
    }
  }
  // The first messages of a training schedule alone do not meet (stage 0's first is a gradient
  // receive, stage 1's an activation receive): the reason connect_pipeline exists.
  CHECK(deadlocks_without > 0);
}

TEST_CASE("schedules: forward before backward, messages pair up, bounded in-flight, no deadlock") {
  for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (int p = 1; p <= 5; ++p) {
      for (int m = 1; m <= 9; ++m) {
        CAPTURE(schedule_name(kind));
        CAPTURE(p);
        CAPTURE(m);
        std::vector<std::vector<Action>> all;
        for (int s = 0; s < p; ++s) all.push_back(make_schedule(kind, s, p, m));
        for (int s = 0; s < p; ++s) {
          const auto& sch = all[s];
          std::vector<int> expect(m);
          for (int i = 0; i < m; ++i) expect[i] = i;
          auto f = micros_of(sch, ActionKind::forward), b = micros_of(sch, ActionKind::backward);
          std::sort(f.begin(), f.end());
          std::sort(b.begin(), b.end());
          CHECK(f == expect);
          CHECK(b == expect);
          int alive = 0, peak = 0;
          for (const Action& a : sch) {
            if (a.kind == ActionKind::forward) peak = std::max(peak, ++alive);
            if (a.kind == ActionKind::backward) --alive;
          }
          CHECK(peak <= max_in_flight(kind, s, p, m));
          if (kind == Schedule::one_f_one_b) CHECK(peak <= p - s);
          for (int i = 0; i < m; ++i) {
            CHECK(position(sch, ActionKind::forward, i) < position(sch, ActionKind::backward, i));
            if (s > 0) CHECK(position(sch, ActionKind::recv_act, i) < position(sch, ActionKind::forward, i));
            if (s < p - 1) CHECK(position(sch, ActionKind::recv_grad, i) < position(sch, ActionKind::backward, i));
            if (s < p - 1) CHECK(position(sch, ActionKind::forward, i) < position(sch, ActionKind::send_act, i));
            if (s > 0) CHECK(position(sch, ActionKind::backward, i) < position(sch, ActionKind::send_grad, i));
          }
          if (s == 0) CHECK(micros_of(sch, ActionKind::recv_act).empty());
          if (s == p - 1) CHECK(micros_of(sch, ActionKind::recv_grad).empty());
          if (s + 1 < p) {
            CHECK(micros_of(sch, ActionKind::send_act) == micros_of(all[s + 1], ActionKind::recv_act));
            CHECK(micros_of(all[s + 1], ActionKind::send_grad) == micros_of(sch, ActionKind::recv_grad));
          }
        }
        CHECK(simulate(all));
      }
    }
  }
}

TEST_CASE("schedules: 1f1b interleaves after warm-up, gpipe runs all forwards first") {
  auto s = make_schedule(Schedule::one_f_one_b, 0, 4, 8);
  auto compute = [](const std::vector<Action>& sch) {
    std::string out;
    for (const Action& a : sch)
      if (a.kind == ActionKind::forward || a.kind == ActionKind::backward)
        out += (a.kind == ActionKind::forward ? "F" : "B") + std::to_string(a.micro) + " ";
    return out;
  };
  CHECK(compute(s) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 ");
  CHECK(compute(make_schedule(Schedule::one_f_one_b, 3, 4, 3)) == "F0 B0 F1 B1 F2 B2 ");
  CHECK(compute(make_schedule(Schedule::gpipe, 1, 2, 3)) == "F0 F1 F2 B0 B1 B2 ");
  CHECK(bubble_fraction(4, 8) == doctest::Approx(3.0 / 11.0));
}

TEST_CASE("forward-only schedule for evaluation") {
  auto s = make_forward_schedule(1, 3, 2);
  REQUIRE(s.size() == 6);
  CHECK(s[0].kind == ActionKind::recv_act);
  CHECK(s[1].kind == ActionKind::forward);
  CHECK(s[2].kind == ActionKind::send_act);
}
