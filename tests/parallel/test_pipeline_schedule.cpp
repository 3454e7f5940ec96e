// Pipeline schedules: ordering, pairing of messages, in-flight bounds and a deadlock-freedom
// simulation for every (schedule, stages, micro-batches) up to small sizes, also under NCCL's
// lazy point-to-point connections (with connect_pipeline first).
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "parallel/pipeline_executor.h"
#include "parallel/pipeline_schedule.h"
#include "tests/support/unused_comm.h"

using namespace trainer;

namespace {

PipeShape shape_of(Schedule schedule, int p, int m, int v) { return PipeShape{schedule, p, m, v}; }

// Every schedule shape the tests cover: gpipe, 1f1b and zero_bubble on 1-5 stages and 1-max_micro
// micro-batches, interleaved on 2-5 stages with 2 and 3 chunks and every multiple of the stages
// up to 3 groups (the others are refused: see the test below).
std::vector<PipeShape> all_shapes(int max_micro) {
  std::vector<PipeShape> out;
  for (int p = 1; p <= 5; ++p) {
    for (int m = 1; m <= max_micro; ++m) {
      out.push_back(shape_of(Schedule::gpipe, p, m, 1));
      out.push_back(shape_of(Schedule::one_f_one_b, p, m, 1));
      out.push_back(shape_of(Schedule::zero_bubble, p, m, 1));
    }
    if (p >= 2)
      for (int m = p; m <= 3 * p; m += p)
        for (int v : {2, 3}) out.push_back(shape_of(Schedule::interleaved, p, m, v));
  }
  return out;
}



std::vector<std::pair<int, int>> micros_of(const std::vector<Action>& s, ActionKind kind) {
  std::vector<std::pair<int, int>> out;
  for (const Action& a : s)
    if (a.kind == kind) out.push_back({a.chunk, a.micro});
  return out;
}

// Tags of one kind of message in schedule order (what a link pairs up).
std::vector<int> tags_of(const std::vector<Action>& s, ActionKind kind, int stage, int m) {
  std::vector<int> out;
  for (const Action& a : s)
    if (a.kind == kind) out.push_back(message_tag(a, stage, m));
  return out;
}

int position(const std::vector<Action>& s, ActionKind kind, int chunk, int micro) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i].kind == kind && s[i].micro == micro && s[i].chunk == chunk) return int(i);
  return -1;
}

// The action on the neighbouring stage whose message a compute action waits for: the send of
// the previous virtual stage (forward) or of the next one (backward). False when none.
bool producer_of(const Action& a, int s, int p, int v, int* stage, Action* send) {
  const int vs = a.chunk * p + s;
  if (a.kind == ActionKind::forward && vs > 0) {
    *stage = prev_stage(s, p);
    *send = {ActionKind::send_act, a.micro, (vs - 1) / p};
    return true;
  }
  if (a.kind == ActionKind::backward && vs < v * p - 1) {
    *stage = next_stage(s, p);
    *send = {ActionKind::send_grad, a.micro, (vs + 1) / p};
    return true;
  }
  return false;
}

bool same(const Action& a, const Action& b) { return a.kind == b.kind && a.micro == b.micro && a.chunk == b.chunk; }

// Executes all stages in lock-free rounds: a compute action may run only when its receive's
// matching send has been issued on the neighbour. Sends never block (they are non-blocking)
// and messages progress independently of their order, as MPI's do; NCCL's in-order streams
// are replayed in test_pipeline_nccl_order.cpp.
bool simulate(const std::vector<std::vector<Action>>& stages, int v) {
  const int p = int(stages.size());
  std::vector<size_t> pc(p, 0);
  auto sent = [&](int stage, const Action& send) {
    for (size_t i = 0; i < pc[stage]; ++i)
      if (same(stages[stage][i], send)) return true;
    return false;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (pc[s] < stages[s].size()) {
        const Action& a = stages[s][pc[s]];
        int from = 0;
        Action send{ActionKind::send_act, 0, 0};
        if (producer_of(a, s, p, v, &from, &send) && !sent(from, send)) break;
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
// (0 activations, 1 gradients, 2 and 3 the wrap-around's) to or from pipeline stage `peer`, or
// a compute action.
struct Step {
  bool compute = false;
  int comm = 0;
  bool send = false;
  int peer = 0;
  Action action{ActionKind::forward, 0, 0};
};

// Records the point-to-point calls connect_pipeline makes; nothing else may be called.
// `stages` maps the group's ranks to pipeline stages.
class RecordingComm final : public testing::UnusedComm {
 public:
  RecordingComm(int id, int rank, std::vector<int> stages, std::vector<Step>* log)
      : UnusedComm(rank, int(stages.size()), "recording"), id_(id), stages_(std::move(stages)), log_(log) {}
  CommRequestPtr send_async(Tensor, int peer, int) override { return logged(true, peer); }
  CommRequestPtr recv_async(Tensor, int peer, int) override { return logged(false, peer); }
  Step step(bool send, int peer, const Action& a) const { return Step{false, id_, send, stages_.at(size_t(peer)), a}; }

 private:
  CommRequestPtr logged(bool send, int peer) {
    log_->push_back(step(send, peer, {}));
    return std::make_unique<DoneRequest>();
  }
  int id_;
  std::vector<int> stages_;
  std::vector<Step>* log_;
};

std::vector<Step> steps_of(const std::vector<Action>& schedule, int stage, bool connect, int p, int v) {
  std::vector<Step> out;
  std::vector<int> chain;
  for (int s = 0; s < p; ++s) chain.push_back(s);
  // As ProcessGrid makes them: the wrap-around pair only on the end stages of a ring.
  const bool wrap = v > 1 && (stage == 0 || stage == p - 1);
  RecordingComm act(0, stage, chain, &out), grad(1, stage, chain, &out);
  RecordingComm wrap_act(2, stage == 0 ? 0 : 1, {0, p - 1}, &out), wrap_grad(3, stage == 0 ? 0 : 1, {0, p - 1}, &out);
  const PipelineComms comms{&act, &grad, wrap ? &wrap_act : nullptr, wrap ? &wrap_grad : nullptr};
  if (connect) connect_pipeline(comms, stage, p, Tensor{}, Tensor{});
  for (const Action& a : schedule) {
    if (is_compute(a.kind)) {
      out.push_back(Step{true, 0, false, 0, a});
      continue;
    }
    const PipelineRoute r = pipeline_route(comms, a.kind, stage, p);
    const bool send = a.kind == ActionKind::send_act || a.kind == ActionKind::send_grad;
    out.push_back(static_cast<const RecordingComm*>(r.comm)->step(send, r.peer, a));
  }
  return out;
}

// Like simulate(), plus NCCL's lazy connections: a stage's first message with a peer on a
// communicator, in each direction, blocks (the host) until the peer has reached its own first
// message of that pair and direction.
bool simulate_lazy_connect(const std::vector<std::vector<Step>>& stages, int v) {
  const int p = int(stages.size());
  auto first_with = [&](int s, int comm, int peer, bool send) {
    for (size_t i = 0; i < stages[s].size(); ++i) {
      const Step& st = stages[s][i];
      if (!st.compute && st.comm == comm && st.peer == peer && st.send == send) return i;
    }
    return stages[s].size();
  };
  std::vector<size_t> pc(p, 0);
  auto issued = [&](int s, const Action& send) {
    for (size_t i = 0; i < pc[s]; ++i)
      if (!stages[s][i].compute && same(stages[s][i].action, send)) return true;
    return false;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      while (pc[s] < stages[s].size()) {
        const Step& st = stages[s][pc[s]];
        if (st.compute) {
          int from = 0;
          Action send{ActionKind::send_act, 0, 0};
          if (producer_of(st.action, s, p, v, &from, &send) && !issued(from, send)) break;
        } else if (first_with(s, st.comm, st.peer, st.send) == pc[s] &&
                   pc[st.peer] < first_with(st.peer, st.comm, s, !st.send)) {
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
  for (const PipeShape& shape : all_shapes(6)) {
    const int p = shape.n_stages, m = shape.n_micro, v = shape.n_chunks;
    if (p < 2) continue;
    CAPTURE(schedule_name(shape.schedule));
    CAPTURE(p);
    CAPTURE(m);
    CAPTURE(v);
    std::vector<std::vector<Step>> with, without, eval;
    for (int s = 0; s < p; ++s) {
      with.push_back(steps_of(make_schedule(shape, s), s, true, p, v));
      without.push_back(steps_of(make_schedule(shape, s), s, false, p, v));
      eval.push_back(steps_of(make_forward_schedule(s, p, m, v), s, true, p, v));
    }
    CHECK(simulate_lazy_connect(with, v));
    CHECK(simulate_lazy_connect(eval, v));
    if (!simulate_lazy_connect(without, v)) ++deadlocks_without;
  }
  // The first messages of a training schedule alone do not meet (stage 0's first is a gradient
  // receive, stage 1's an activation receive): the reason connect_pipeline exists.
  CHECK(deadlocks_without > 0);
}

TEST_CASE("schedules: forward before backward, messages pair up, bounded in-flight, no deadlock") {
  for (const PipeShape& shape : all_shapes(9)) {
    const int p = shape.n_stages, m = shape.n_micro, v = shape.n_chunks;
    CAPTURE(schedule_name(shape.schedule));
    CAPTURE(p);
    CAPTURE(m);
    CAPTURE(v);
    std::vector<std::vector<Action>> all;
    for (int s = 0; s < p; ++s) all.push_back(make_schedule(shape, s));
    for (int s = 0; s < p; ++s) {
      const auto& sch = all[s];
      // Every (chunk, micro-batch) once forward and once backward (and once backward_weight
      // where backward is split), each chunk's in micro order.
      const bool split = splits_backward(shape.schedule);
      std::vector<ActionKind> kinds = {ActionKind::forward, ActionKind::backward};
      if (split) kinds.push_back(ActionKind::backward_weight);
      CHECK(split == !micros_of(sch, ActionKind::backward_weight).empty());
      for (ActionKind kind : kinds) {
        std::vector<std::pair<int, int>> got = micros_of(sch, kind), expect;
        for (int c = 0; c < v; ++c) {
          std::vector<int> order;
          for (const auto& cm : got)
            if (cm.first == c) order.push_back(cm.second);
          std::vector<int> want(m);
          for (int i = 0; i < m; ++i) want[size_t(i)] = i;
          CHECK(order == want);
          for (int i = 0; i < m; ++i) expect.push_back({c, i});
        }
        std::sort(got.begin(), got.end());
        CHECK(got == expect);
      }
      std::vector<int> alive(size_t(v), 0);
      int peak = 0;
      const ActionKind release = split ? ActionKind::backward_weight : ActionKind::backward;
      for (const Action& a : sch) {
        if (a.kind == ActionKind::forward) peak = std::max(peak, ++alive[size_t(a.chunk)]);
        if (a.kind == release) --alive[size_t(a.chunk)];
      }
      CHECK(peak == max_in_flight(shape, s));
      if (shape.schedule == Schedule::one_f_one_b) CHECK(peak <= p - s);
      if (split) {
        // zero_bubble: 1F1B's bound between F and B, its first stage's (p) until W.
        CHECK(peak <= p);
        int before_b = 0;
        for (const Action& a : sch) {
          if (a.kind == ActionKind::forward) CHECK(++before_b <= p - s);
          if (a.kind == ActionKind::backward) --before_b;
        }
      }
      if (shape.schedule == Schedule::gpipe) CHECK(peak == m);
      for (int c = 0; c < v; ++c) {
        const int vs = c * p + s;
        for (int i = 0; i < m; ++i) {
          CHECK(position(sch, ActionKind::forward, c, i) < position(sch, ActionKind::backward, c, i));
          if (split)
            CHECK(position(sch, ActionKind::backward, c, i) < position(sch, ActionKind::backward_weight, c, i));
          if (vs > 0) CHECK(position(sch, ActionKind::recv_act, c, i) < position(sch, ActionKind::forward, c, i));
          if (vs < v * p - 1) {
            CHECK(position(sch, ActionKind::recv_grad, c, i) < position(sch, ActionKind::backward, c, i));
            CHECK(position(sch, ActionKind::forward, c, i) < position(sch, ActionKind::send_act, c, i));
          }
          if (vs > 0) CHECK(position(sch, ActionKind::backward, c, i) < position(sch, ActionKind::send_grad, c, i));
          if (vs == 0) CHECK(position(sch, ActionKind::recv_act, c, i) < 0);
          if (vs == v * p - 1) CHECK(position(sch, ActionKind::recv_grad, c, i) < 0);
        }
      }
      // A receive is posted at most one compute action before the compute that needs it.
      int computes = 0;
      std::vector<int> posted_at(sch.size(), -1);
      for (size_t k = 0; k < sch.size(); ++k) {
        const Action& a = sch[k];
        if (is_compute(a.kind)) {
          const ActionKind r = a.kind == ActionKind::forward ? ActionKind::recv_act : ActionKind::recv_grad;
          const int at = position(sch, r, a.chunk, a.micro);
          if (at >= 0 && a.kind != ActionKind::backward_weight) {
            int between = 0;
            for (int j = at + 1; j < int(k); ++j) between += is_compute(sch[size_t(j)].kind);
            CHECK(between <= 1);
          }
          ++computes;
        }
      }
      CHECK(computes == (split ? 3 : 2) * m * v);
      // The messages on each link pair up in order: what this stage sends to the next one is
      // what that one receives from it, tag by tag.
      if (p > 1) {
        const int n = next_stage(s, p);
        std::vector<int> sent = tags_of(sch, ActionKind::send_act, s, m), got = tags_of(all[n], ActionKind::recv_act, n, m);
        if (v == 1 && s == p - 1) CHECK(sent.empty());
        else CHECK(sent == got);
        std::vector<int> gsent = tags_of(all[n], ActionKind::send_grad, n, m), ggot = tags_of(sch, ActionKind::recv_grad, s, m);
        if (v == 1 && s == p - 1) CHECK(ggot.empty());
        else CHECK(gsent == ggot);
        std::vector<int> unique = sent;
        std::sort(unique.begin(), unique.end());
        CHECK(std::adjacent_find(unique.begin(), unique.end()) == unique.end());
      }
    }
    CHECK(simulate(all, v));
  }
}

TEST_CASE("schedules: 1f1b interleaves after warm-up, gpipe runs all forwards first, interleaved cycles chunks") {
  auto compute = [](const std::vector<Action>& sch) {
    std::string out;
    for (const Action& a : sch)
      if (a.kind == ActionKind::forward || a.kind == ActionKind::backward)
        out += (a.kind == ActionKind::forward ? "F" : "B") + std::to_string(a.micro) +
               (a.chunk ? "." + std::to_string(a.chunk) : "") + " ";
    return out;
  };
  CHECK(compute(make_schedule(shape_of(Schedule::one_f_one_b, 4, 8, 1), 0)) ==
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 ");
  CHECK(compute(make_schedule(shape_of(Schedule::one_f_one_b, 4, 3, 1), 3)) == "F0 B0 F1 B1 F2 B2 ");
  CHECK(compute(make_schedule(shape_of(Schedule::gpipe, 2, 3, 1), 1)) == "F0 F1 F2 B0 B1 B2 ");
  // Megatron-LM's order for 2 stages, 2 chunks, 4 micro-batches: groups of 2 micro-batches
  // through chunk 0 then chunk 1; stage 0 warms up with (2-0-1)*2 + (2-1)*2 = 4 forwards,
  // the last stage with 2.
  CHECK(compute(make_schedule(shape_of(Schedule::interleaved, 2, 4, 2), 0)) ==
        "F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3 ");
  CHECK(compute(make_schedule(shape_of(Schedule::interleaved, 2, 4, 2), 1)) ==
        "F0 F1 F0.1 B0.1 F1.1 B1.1 F2 B0 F3 B1 F2.1 B2.1 F3.1 B3.1 B2 B3 ");
  CHECK(bubble_fraction(shape_of(Schedule::one_f_one_b, 4, 8, 1)) == doctest::Approx(3.0 / 11.0));
  CHECK(bubble_fraction(shape_of(Schedule::interleaved, 4, 8, 2)) == doctest::Approx(3.0 / 19.0));
  CHECK_THROWS(make_schedule(shape_of(Schedule::interleaved, 2, 4, 1), 0));
  for (int m : {1, 3, 5, 7, 9}) CHECK_THROWS(make_schedule(shape_of(Schedule::interleaved, 2, m, 2), 0));
  CHECK_THROWS(max_in_flight(shape_of(Schedule::interleaved, 4, 6, 2), 0));
  CHECK_THROWS(make_schedule(shape_of(Schedule::interleaved, 1, 4, 2), 0));
  CHECK_THROWS(make_schedule(shape_of(Schedule::one_f_one_b, 2, 4, 2), 0));
}

TEST_CASE("zero_bubble: W fills the waits, the bubble between ZB-H1's and 1f1b's") {
  auto compute = [](const std::vector<Action>& sch) {
    std::string out;
    for (const Action& a : sch)
      if (is_compute(a.kind))
        out += std::string(a.kind == ActionKind::forward ? "F" : a.kind == ActionKind::backward ? "B" : "W") +
               std::to_string(a.micro) + " ";
    return out;
  };
  // Stage 0 warms up like 1F1B; the last stage, which 1F1B keeps at one micro-batch, puts its
  // W's off while the next forward is on its way.
  CHECK(compute(make_schedule(shape_of(Schedule::zero_bubble, 2, 4, 1), 0)) == "F0 F1 B0 W0 B1 F2 W1 F3 B2 W2 B3 W3 ");
  CHECK(compute(make_schedule(shape_of(Schedule::zero_bubble, 2, 4, 1), 1)) == "F0 B0 F1 B1 W0 W1 F2 B2 F3 B3 W2 W3 ");
  for (int p = 2; p <= 5; ++p)
    for (int m = 1; m <= 9; ++m) {
      CAPTURE(p);
      CAPTURE(m);
      const double zb = bubble_fraction(shape_of(Schedule::zero_bubble, p, m, 1));
      const double f1 = bubble_fraction(shape_of(Schedule::one_f_one_b, p, m, 1));
      const double ideal = double(p - 1) / double(3 * m + p - 1);
      CHECK(zb < f1);
      CHECK(zb >= ideal - 1e-12);
    }
  // ZB-H1's bubble where the bound allows it.
  CHECK(bubble_fraction(shape_of(Schedule::zero_bubble, 2, 4, 1)) == doctest::Approx(1.0 / 13.0));
  CHECK(bubble_fraction(shape_of(Schedule::zero_bubble, 4, 4, 1)) == doctest::Approx(3.0 / 15.0));
  CHECK(bubble_fraction(shape_of(Schedule::zero_bubble, 4, 8, 1)) < 0.18);
}

TEST_CASE("interleaved messages cross the ring: the last stage feeds stage 0's next chunk") {
  const PipeShape shape = shape_of(Schedule::interleaved, 3, 3, 2);
  const auto last = make_schedule(shape, 2), first = make_schedule(shape, 0);
  // Stage 2's chunk 0 (virtual stage 2) sends to stage 0's chunk 1 (virtual stage 3); its
  // chunk 1 is the model's end and sends nothing.
  CHECK(position(last, ActionKind::send_act, 0, 1) >= 0);
  CHECK(position(last, ActionKind::send_act, 1, 1) < 0);
  CHECK(position(first, ActionKind::recv_act, 1, 1) >= 0);
  CHECK(position(first, ActionKind::recv_act, 0, 1) < 0);
  CHECK(message_tag({ActionKind::send_act, 1, 0}, 2, 3) == message_tag({ActionKind::recv_act, 1, 1}, 0, 3));
  CHECK(message_tag({ActionKind::send_grad, 1, 1}, 0, 3) == message_tag({ActionKind::recv_grad, 1, 0}, 2, 3));
  CHECK(action_str({ActionKind::forward, 3, 1}) == "forward(3, chunk 1)");
  CHECK(action_str({ActionKind::forward, 3, 0}) == "forward(3)");
}

TEST_CASE("forward-only schedule for evaluation") {
  auto s = make_forward_schedule(1, 3, 2, 1);
  REQUIRE(s.size() == 6);
  CHECK(s[0].kind == ActionKind::recv_act);
  CHECK(s[1].kind == ActionKind::forward);
  CHECK(s[2].kind == ActionKind::send_act);
  // Interleaved: stage 0 receives only for its later chunks; the last stage's last chunk sends
  // nothing.
  auto first = make_forward_schedule(0, 2, 2, 2), last = make_forward_schedule(1, 2, 2, 2);
  CHECK(position(first, ActionKind::recv_act, 0, 0) < 0);
  CHECK(position(first, ActionKind::recv_act, 1, 0) >= 0);
  CHECK(position(last, ActionKind::send_act, 1, 1) < 0);
  CHECK(position(last, ActionKind::send_act, 0, 1) >= 0);
}
