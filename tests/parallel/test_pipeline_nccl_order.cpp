// run_pipeline on NCCL's in-order streams: every stage's calls are recorded as the executor
// makes them (connect_pipeline, then the step's schedule, receives posted where the schedule
// puts them, waits where run_pipeline puts them) and replayed on a model of what NcclComm
// does with them:
// - each communicator's operations on a rank run in issue order on its one stream: an
//   operation completes only after every earlier one of that communicator on that rank;
// - an operation starts only once the compute stream has run what was queued before it
//   (NcclComm::enqueue), and a request's wait() queues a wait for it on the compute stream;
// - the k-th send from a to b on a communicator pairs with b's k-th receive from a (NCCL has
//   no tags; the tags are checked to agree), and a receive completes only once its send is
//   at the head of the sender's stream. Strictly (rendezvous), a send also needs its
//   receive at the head of the peer's stream; eagerly, a send at the head completes alone.
// MPI's non-blocking point-to-point progresses independently of issue order, so the MPI
// tests cannot see such cycles; test_pipeline_schedule.cpp checks the schedules' own order.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "parallel/pipeline_executor.h"
#include "parallel/pipeline_schedule.h"
#include "tests/support/unused_comm.h"

using namespace trainer;

namespace {

// One point-to-point call as a rank's host issued it.
struct CommOp {
  int stream = 0;  // the communicator it went to (its stream on this rank)
  bool send = false;
  int peer = 0;  // pipeline stage
  int tag = 0;
  size_t after = 0;  // compute-stream items queued before it (it starts once they ran)
};

// A compute-stream item: a compute pass, or a wait for one of the rank's operations.
struct ComputeItem {
  int waits_for = -1;  // index into RankLog::ops; -1: a compute pass
  std::string what;
};

struct RankLog {
  std::vector<CommOp> ops;
  std::vector<ComputeItem> compute;
};

std::string describe(const CommOp& o) {
  return std::string(o.send ? "send to " : "recv from ") + std::to_string(o.peer) + " (stream " +
         std::to_string(o.stream) + ", tag " + std::to_string(o.tag) + ")";
}

// Completes (as NcclRequest does) by queueing a compute-stream wait; destroyed unwaited, it
// waits.
class RecordedRequest final : public CommRequest {
 public:
  RecordedRequest(RankLog* log, int op) : log_(log), op_(op) {}
  ~RecordedRequest() override { wait(); }
  void wait() override {
    if (waited_) return;
    waited_ = true;
    log_->compute.push_back({op_, "wait for " + describe(log_->ops[size_t(op_)])});
  }

 private:
  RankLog* log_;
  int op_;
  bool waited_ = false;
};

// Records the point-to-point calls made on one communicator of one rank. `stages` maps the
// group's ranks to pipeline stages; `stream` names the communicator (equal ids share one
// stream: how a layout that puts two links on one communicator is modelled).
class RecordingComm final : public testing::UnusedComm {
 public:
  RecordingComm(int stream, int rank, std::vector<int> stages, RankLog* log)
      : UnusedComm(rank, int(stages.size()), "recording"), stream_(stream), stages_(std::move(stages)), log_(log) {}
  CommRequestPtr send_async(Tensor, int peer, int tag) override { return issue(true, peer, tag); }
  CommRequestPtr recv_async(Tensor, int peer, int tag) override { return issue(false, peer, tag); }

 private:
  CommRequestPtr issue(bool send, int peer, int tag) {
    REQUIRE(peer >= 0);
    REQUIRE(peer < size());
    REQUIRE(peer != rank());
    log_->ops.push_back({stream_, send, stages_[size_t(peer)], tag, log_->compute.size()});
    return std::make_unique<RecordedRequest>(log_, int(log_->ops.size()) - 1);
  }
  int stream_;
  std::vector<int> stages_;
  RankLog* log_;
};

std::vector<int> identity(int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(i);
  return out;
}

enum class Pass : uint8_t { train, eval };

// Which communicators carry which links: ProcessGrid's (the wrap-around on its own pair), or
// layouts known to deadlock: the wrap-around on the chain's communicators (before the
// wrap-around had its own), everything on one communicator.
enum class CommLayout : uint8_t { grid, wrap_on_chain, one_comm };

// Stage `stage`'s calls: connect_pipeline, then one step as the trainer runs it (training:
// make_schedule with max_in_flight's slots; evaluation: make_forward_schedule).
RankLog record_stage(const PipeShape& shape, int stage, Pass pass, CommLayout layout) {
  const int p = shape.n_stages;
  RankLog log;
  // Stream ids: 0 activations, 1 gradients, 2 and 3 the wrap-around's (ProcessGrid's groups:
  // the chain's over every stage, the wrap-around's over stage 0 (rank 0) and the last).
  const int grad_stream = layout == CommLayout::one_comm ? 0 : 1;
  const int wrap_stream = layout == CommLayout::grid ? 2 : 0;
  RecordingComm act(0, stage, identity(p), &log), grad(grad_stream, stage, identity(p), &log);
  RecordingComm wrap_act(wrap_stream, stage == 0 ? 0 : 1, {0, p - 1}, &log);
  RecordingComm wrap_grad(layout == CommLayout::grid ? 3 : grad_stream, stage == 0 ? 0 : 1, {0, p - 1}, &log);
  const bool wraps = shape.n_chunks > 1 && (stage == 0 || stage == p - 1);
  const PipelineComms comms{&act, &grad, wraps ? &wrap_act : nullptr, wraps ? &wrap_grad : nullptr};
  connect_pipeline(comms, stage, p, Tensor{}, Tensor{});
  PipelineHooks hooks;
  auto compute = [&log](const char* what) {
    return [&log, what](int micro, int chunk) {
      log.compute.push_back(
          {-1, std::string(what) + "(" + std::to_string(micro) + ", chunk " + std::to_string(chunk) + ")"});
    };
  };
  hooks.forward = compute("forward");
  hooks.backward = compute("backward");
  hooks.backward_weight = compute("backward_weight");
  hooks.recv_act_buffer = hooks.send_act_buffer = hooks.recv_grad_buffer = hooks.send_grad_buffer = [](int, int) {
    return Tensor{};
  };
  const int slots = max_in_flight(shape, stage);
  if (pass == Pass::train)
    run_pipeline(make_schedule(shape, stage), comms, stage, shape.n_micro, slots, hooks);
  else
    run_pipeline(make_forward_schedule(stage, p, shape.n_micro, shape.n_chunks), comms, stage, shape.n_micro, slots,
                 hooks);
  return log;
}

enum class SendModel : uint8_t { rendezvous, eager };

// Replays the ranks' logs on the device model above. Returns "" when every operation and
// every compute item completed, else where each rank is stuck.
std::string replay(const std::vector<RankLog>& ranks, SendModel model) {
  const int p = int(ranks.size());
  const size_t n = ranks.size();
  // Pair the k-th send from a to b on a stream with b's k-th receive from a.
  using Link = std::tuple<int, int, int>;  // stream, from, to
  std::map<Link, std::vector<std::pair<int, int>>> sends, recvs;  // (rank, op) in issue order
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < ranks[size_t(r)].ops.size(); ++i) {
      const CommOp& o = ranks[size_t(r)].ops[i];
      if (o.send) sends[{o.stream, r, o.peer}].push_back({r, int(i)});
      else recvs[{o.stream, o.peer, r}].push_back({r, int(i)});
    }
  std::vector<std::vector<std::pair<int, int>>> match(n);
  for (int r = 0; r < p; ++r) match[size_t(r)].assign(ranks[size_t(r)].ops.size(), {-1, -1});
  for (const auto& [link, s] : sends) {
    const auto& v = recvs[link];
    if (v.size() != s.size()) return "unpaired messages on a link";
    for (size_t k = 0; k < s.size(); ++k) {
      const CommOp& so = ranks[size_t(s[k].first)].ops[size_t(s[k].second)];
      const CommOp& ro = ranks[size_t(v[k].first)].ops[size_t(v[k].second)];
      if (so.tag != ro.tag) return "messages pair up in an order their tags do not agree with";
      match[size_t(s[k].first)][size_t(s[k].second)] = v[k];
      match[size_t(v[k].first)][size_t(v[k].second)] = s[k];
    }
  }
  for (const auto& [link, v] : recvs)
    if (!sends.count(link) && !v.empty()) return "a receive without a send";
  // Each rank's streams: its operations' indices per communicator, in issue order.
  std::vector<std::map<int, std::vector<int>>> queue(n);
  std::vector<std::map<int, size_t>> head(n);
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < ranks[size_t(r)].ops.size(); ++i)
      queue[size_t(r)][ranks[size_t(r)].ops[i].stream].push_back(int(i));
  std::vector<size_t> pc(n, 0);  // compute-stream position
  std::vector<std::vector<bool>> done(n);
  for (int r = 0; r < p; ++r) done[size_t(r)].assign(ranks[size_t(r)].ops.size(), false);
  auto at_head = [&](int r, int op) {
    const CommOp& o = ranks[size_t(r)].ops[size_t(op)];
    const std::vector<int>& q = queue[size_t(r)][o.stream];
    const size_t h = head[size_t(r)][o.stream];
    return h < q.size() && q[h] == op && pc[size_t(r)] >= o.after;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const RankLog& log = ranks[size_t(r)];
      size_t& c = pc[size_t(r)];
      while (c < log.compute.size() &&
             (log.compute[c].waits_for < 0 || done[size_t(r)][size_t(log.compute[c].waits_for)])) {
        ++c;
        progress = true;
      }
      for (auto& [stream, q] : queue[size_t(r)]) {
        size_t& h = head[size_t(r)][stream];
        while (h < q.size()) {
          const int op = q[h];
          if (!at_head(r, op)) break;
          const auto [peer, peer_op] = match[size_t(r)][size_t(op)];
          const bool peer_ready = at_head(peer, peer_op);
          const bool ok = log.ops[size_t(op)].send ? (model == SendModel::eager || peer_ready)
                                                   : (done[size_t(peer)][size_t(peer_op)] || peer_ready);
          if (!ok) break;
          done[size_t(r)][size_t(op)] = true;
          if (peer_ready && model == SendModel::rendezvous) {
            done[size_t(peer)][size_t(peer_op)] = true;
            ++head[size_t(peer)][ranks[size_t(peer)].ops[size_t(peer_op)].stream];
          }
          ++h;
          progress = true;
        }
      }
    }
  }
  std::string stuck;
  for (int r = 0; r < p; ++r) {
    const RankLog& log = ranks[size_t(r)];
    bool all = pc[size_t(r)] == log.compute.size();
    std::string heads;
    for (auto& [stream, q] : queue[size_t(r)]) {
      const size_t h = head[size_t(r)][stream];
      if (h == q.size()) continue;
      all = false;
      heads += "; stream head: " + describe(log.ops[size_t(q[h])]);
    }
    if (all) continue;
    stuck += "stage " + std::to_string(r) + " compute at " +
             (pc[size_t(r)] < log.compute.size() ? log.compute[pc[size_t(r)]].what : std::string("end")) + heads +
             "\n";
  }
  return stuck;
}

std::vector<RankLog> record_all(const PipeShape& shape, Pass pass, CommLayout layout) {
  std::vector<RankLog> out;
  for (int s = 0; s < shape.n_stages; ++s) out.push_back(record_stage(shape, s, pass, layout));
  return out;
}

// The pipelined shapes of test_pipeline_schedule.cpp: gpipe, 1f1b and zero_bubble on 2-5 stages
// and 1-8 micro-batches, interleaved on 2-5 stages with 2 and 3 chunks and every multiple of
// the stages up to 3 groups.
std::vector<PipeShape> pipelined_shapes() {
  std::vector<PipeShape> out;
  for (int p = 2; p <= 5; ++p) {
    for (int m = 1; m <= 8; ++m)
      for (Schedule s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::zero_bubble}) out.push_back({s, p, m, 1});
    for (int m = p; m <= 3 * p; m += p)
      for (int v : {2, 3}) out.push_back({Schedule::interleaved, p, m, v});
  }
  return out;
}

std::string shape_str(const PipeShape& s) {
  return std::string(schedule_name(s.schedule)) + " p" + std::to_string(s.n_stages) + " m" +
         std::to_string(s.n_micro) + " v" + std::to_string(s.n_chunks);
}

}  // namespace

TEST_CASE("NCCL order model: a send-send exchange on one communicator deadlocks only under rendezvous") {
  // Both ranks send first, then receive: eager sends complete alone, rendezvous ones never meet.
  std::vector<RankLog> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[size_t(r)].ops = {{0, true, 1 - r, 7, 0}, {0, false, 1 - r, 7, 0}};
    ranks[size_t(r)].compute = {{0, "wait"}, {1, "wait"}};
  }
  CHECK(replay(ranks, SendModel::eager).empty());
  CHECK(!replay(ranks, SendModel::rendezvous).empty());
  // On two communicators the same exchange meets.
  for (int r = 0; r < 2; ++r) ranks[size_t(r)].ops[size_t(r)].stream = 1;
  CHECK(replay(ranks, SendModel::rendezvous).empty());
  // A receive never completes before its send is issued: here the send waits for compute that
  // waits for the receive.
  ranks[0].ops = {{0, false, 1, 7, 0}};
  ranks[0].compute = {{0, "wait"}};
  ranks[1].ops = {{0, true, 0, 7, 1}};
  ranks[1].compute = {{-1, "forward(0)"}, {0, "wait"}};
  CHECK(replay(ranks, SendModel::eager).empty());
  ranks[1].compute = {{-1, "forward(0)"}};
  ranks[1].ops[0].after = 2;  // behind compute that never runs
  CHECK(!replay(ranks, SendModel::eager).empty());
}

TEST_CASE("NCCL order model: activations and gradients on one communicator deadlock 1f1b") {
  // Why the pipeline group has a communicator per direction (process_grid.h).
  int deadlocks = 0;
  for (int m = 1; m <= 8; ++m)
    if (!replay(record_all({Schedule::one_f_one_b, 2, m, 1}, Pass::train, CommLayout::one_comm), SendModel::rendezvous)
             .empty())
      ++deadlocks;
  CHECK(deadlocks > 0);
}

TEST_CASE("NCCL order model: the ring's wrap-around on the chain's communicators deadlocks interleaved") {
  // Why the wrap-around link has communicators of its own (pipeline_links.h). p 2, m 2, v 2:
  // stage 0's activation stream holds send(0) to 1, recv(0, chunk 1) from 1, send(1) to 1;
  // stage 1's recv(0), recv(1) from 0, then send(0) to 0: a cycle even with eager sends.
  const PipeShape smallest{Schedule::interleaved, 2, 2, 2};
  for (SendModel model : {SendModel::rendezvous, SendModel::eager})
    CHECK(!replay(record_all(smallest, Pass::train, CommLayout::wrap_on_chain), model).empty());
  CHECK(!replay(record_all(smallest, Pass::eval, CommLayout::wrap_on_chain), SendModel::rendezvous).empty());
  int deadlocks = 0, interleaved = 0;
  for (const PipeShape& shape : pipelined_shapes()) {
    if (shape.schedule != Schedule::interleaved) continue;
    ++interleaved;
    if (!replay(record_all(shape, Pass::train, CommLayout::wrap_on_chain), SendModel::rendezvous).empty()) ++deadlocks;
  }
  CHECK(deadlocks == interleaved);
}

TEST_CASE("run_pipeline's messages complete on NCCL's in-order streams, every schedule and shape") {
  int cases = 0;
  for (const PipeShape& shape : pipelined_shapes()) {
    for (Pass pass : {Pass::train, Pass::eval}) {
      // The forward-only schedule depends on the chunks only (its slots on the schedule).
      if (pass == Pass::eval && shape.schedule == Schedule::gpipe) continue;
      const std::vector<RankLog> ranks = record_all(shape, pass, CommLayout::grid);
      for (SendModel model : {SendModel::rendezvous, SendModel::eager}) {
        const std::string what = shape_str(shape) + (pass == Pass::train ? " train" : " eval") +
                                 (model == SendModel::rendezvous ? " rendezvous" : " eager");
        CAPTURE(what);
        const std::string stuck = replay(ranks, model);
        CHECK_MESSAGE(stuck.empty(), stuck);
        ++cases;
      }
    }
  }
  CHECK(cases > 300);
}
