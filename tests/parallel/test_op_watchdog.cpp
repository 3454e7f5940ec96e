// The NCCL watchdog's timing logic (parallel/op_watchdog.h) on a fake clock: completed
// operations drop out oldest first, only the oldest pending one is judged, it is reported once
// and only after the timeout, an operation still being issued counts as pending, and the report
// names the operation, group, sequence number, peer and size.
#include <doctest/doctest.h>

#include <set>

#include "parallel/op_watchdog.h"

namespace trainer {
namespace {

struct FakeDevice {
  std::set<uint64_t> finished;
  int queries = 0;
  bool done(uint64_t handle) {
    ++queries;
    return finished.count(handle) > 0;
  }
};

TEST_CASE("watchdog: nothing is late before the timeout, the oldest pending op is late after it") {
  OpWatchdog w("data", 300);
  FakeDevice dev;
  auto done = [&](uint64_t h) { return dev.done(h); };
  CHECK(w.begin("all_reduce", -1, 4 << 20, 10.0, 101) == 1);
  CHECK(w.begin("all_reduce", -1, 1024, 20.0, 102) == 2);
  CHECK_FALSE(w.poll(11.0, done));
  CHECK_FALSE(w.poll(310.0, done));  // exactly the timeout: not yet
  CHECK(w.in_flight() == 2);
  auto late = w.poll(310.5, done);
  REQUIRE(late);
  CHECK(late->seq == 1);
  CHECK(late->op == "all_reduce");
  const std::string text = w.describe(*late, 310.5);
  CHECK(text.find("all_reduce #1 on the data group") != std::string::npos);
  CHECK(text.find("4.0 MiB") != std::string::npos);
  CHECK(text.find("within 300 s (parallel.timeout_s)") != std::string::npos);
  CHECK(text.find("waited 300 s") != std::string::npos);
  // Reported once: the next poll stays quiet for the same operation.
  CHECK_FALSE(w.poll(400.0, done));
}

TEST_CASE("watchdog: completed ops drop out in order and the next oldest is timed from its own start") {
  OpWatchdog w("tensor", 5);
  FakeDevice dev;
  auto done = [&](uint64_t h) { return dev.done(h); };
  w.begin("all_reduce", -1, 64, 0.0, 1);
  w.begin("all_gather", -1, 64, 4.0, 2);
  w.begin("reduce_scatter", -1, 64, 8.0, 3);
  dev.finished = {1};
  CHECK_FALSE(w.poll(6.0, done));  // #1 done; #2 started at 4, waited 2
  CHECK(w.in_flight() == 2);
  auto late = w.poll(9.5, done);
  REQUIRE(late);
  CHECK(late->seq == 2);
  dev.finished = {1, 2, 3};
  CHECK_FALSE(w.poll(100.0, done));
  CHECK(w.in_flight() == 0);
}

TEST_CASE("watchdog: a pending oldest op stops the scan, so later ones are not queried") {
  OpWatchdog w("pipeline", 60);
  FakeDevice dev;
  auto done = [&](uint64_t h) { return dev.done(h); };
  for (uint64_t i = 1; i <= 50; ++i) w.begin("send", 3, 128, 0.0, i);
  dev.finished = {2, 3, 4};  // #1 is still pending: the stream completes in order
  dev.queries = 0;
  CHECK_FALSE(w.poll(1.0, done));
  CHECK(dev.queries == 1);
  CHECK(w.in_flight() == 50);
}

TEST_CASE("watchdog: an op still being issued (no handle yet) is pending and can be late") {
  OpWatchdog w("pipeline", 10);
  int queries = 0;
  auto done = [&](uint64_t) {
    ++queries;
    return true;
  };
  const uint64_t seq = w.begin("recv", 7, 2048, 0.0, 0);
  CHECK_FALSE(w.poll(5.0, done));
  CHECK(queries == 0);
  auto late = w.poll(11.0, done);
  REQUIRE(late);
  const std::string text = w.describe(*late, 11.0);
  CHECK(text.find("recv #1 on the pipeline group from rank 7 (2048 bytes)") != std::string::npos);
  w.attach(seq, 99);
  CHECK_FALSE(w.poll(12.0, done));
  CHECK(queries == 1);
  CHECK(w.in_flight() == 0);
}

TEST_CASE("watchdog: a send names the peer it goes to and drain hands back what is left") {
  OpWatchdog w("pipeline (gradients)", 1);
  w.begin("send", 2, 10, 0.0, 5);
  w.begin("send", 2, 10, 0.0, 6);
  auto late = w.poll(2.0, [](uint64_t) { return false; });
  REQUIRE(late);
  CHECK(w.describe(*late, 2.0).find("send #1 on the pipeline (gradients) group to rank 2") != std::string::npos);
  auto left = w.drain();
  REQUIRE(left.size() == 2);
  CHECK(left[0].handle == 5);
  CHECK(left[1].handle == 6);
  CHECK(w.in_flight() == 0);
}
TEST_CASE("watchdog: a cancelled op (its issue failed) is never reported, and the next one is watched") {
  OpWatchdog w("data", 10);
  auto never = [](uint64_t) { return false; };
  const uint64_t failed = w.begin("all_reduce", -1, 64, 0.0, 0);
  const uint64_t next = w.begin("all_gather", -1, 64, 5.0, 0);
  w.cancel(failed);
  w.cancel(failed);  // twice, or for a sequence number it never had: nothing happens
  w.cancel(12345);
  CHECK(w.in_flight() == 1);
  CHECK_FALSE(w.poll(14.0, never));  // #1 would be late by now; #2 is not yet
  w.attach(next, 7);
  auto late = w.poll(16.0, never);
  REQUIRE(late);
  CHECK(late->seq == next);
  CHECK(w.describe(*late, 16.0).find("all_gather #2 on the data group") != std::string::npos);
}

}  // namespace
}  // namespace trainer
