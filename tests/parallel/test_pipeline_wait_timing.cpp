// run_pipeline's wait time: with a wait_timer each wait is bracketed by two marks on the
// device's queue (a GPU's wait() returns at once, having only queued a stream wait), and
// total_wait_s adds the time between them; without one, the host's clock times the waits.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "parallel/pipeline_executor.h"
#include "parallel/pipeline_schedule.h"
#include "tests/support/unused_comm.h"

using namespace trainer;

namespace {

// Requests that complete at once, as NCCL's do on the host.
class QueuedRequest final : public CommRequest {
 public:
  void wait() override {}
};

class QueuingComm final : public testing::UnusedComm {
 public:
  QueuingComm(int rank, int size) : UnusedComm(rank, size, "queuing") {}
  CommRequestPtr send_async(Tensor, int, int) override { return std::make_unique<QueuedRequest>(); }
  CommRequestPtr recv_async(Tensor, int, int) override { return std::make_unique<QueuedRequest>(); }
};

// Mark i lies at i * i milliseconds on the device; counts what is asked of it.
class SquareTimer final : public EventTimer {
 public:
  int record() override { return marks++; }
  double seconds(int from, int to) override {
    REQUIRE(from < marks);
    REQUIRE(to < marks);
    ++reads;
    return 1e-3 * double(to * to - from * from);
  }
  void reset() override { marks = 0; }
  int marks = 0, reads = 0;
};

PipelineHooks noop_hooks() {
  PipelineHooks h;
  h.forward = h.backward = h.backward_weight = [](int, int) {};
  h.recv_act_buffer = h.send_act_buffer = h.recv_grad_buffer = h.send_grad_buffer = [](int, int) { return Tensor{}; };
  return h;
}

TEST_CASE("pipeline waits are timed between marks on the device when a wait_timer is given") {
  const PipeShape shape{Schedule::one_f_one_b, 2, 4, 1};
  for (int stage = 0; stage < 2; ++stage) {
    CAPTURE(stage);
    QueuingComm act(stage, 2), grad(stage, 2);
    const PipelineComms comms{&act, &grad, nullptr, nullptr};
    SquareTimer timer;
    PipelineHooks hooks = noop_hooks();
    hooks.wait_timer = &timer;
    const PipelineTimes t = run_pipeline(make_schedule(shape, stage), comms, stage, 4, 1, hooks);
    CHECK(t.wait_s == 0.0);  // nothing on the host's clock
    // Every receive the stage waits for (4 micro-batches, one direction each) and its sends,
    // then the final waits: one pair of consecutive marks each, in order.
    REQUIRE(t.wait_marks.size() >= 5);
    CHECK(timer.marks == int(2 * t.wait_marks.size()));
    double want = 0;
    for (size_t i = 0; i < t.wait_marks.size(); ++i) {
      CHECK(t.wait_marks[i].first == int(2 * i));
      CHECK(t.wait_marks[i].second == int(2 * i + 1));
      want += 1e-3 * double(4 * i + 1);  // (2i + 1)^2 - (2i)^2
    }
    CHECK(total_wait_s(t, &timer) == doctest::Approx(want));
    CHECK(timer.reads == int(t.wait_marks.size()));
  }
}

TEST_CASE("pipeline waits without a wait_timer are on the host's clock, and marks need their timer") {
  QueuingComm act(0, 2), grad(0, 2);
  const PipelineTimes t = run_pipeline(make_schedule(PipeShape{Schedule::one_f_one_b, 2, 2, 1}, 0),
                                       PipelineComms{&act, &grad, nullptr, nullptr}, 0, 2, 1, noop_hooks());
  CHECK(t.wait_marks.empty());
  CHECK(t.wait_s >= 0.0);
  CHECK(total_wait_s(t, nullptr) == t.wait_s);
  PipelineTimes marked;
  marked.wait_marks.emplace_back(0, 1);
  CHECK_THROWS_AS(total_wait_s(marked, nullptr), std::logic_error);
}

}  // namespace
