// OpWatchdog: the timing logic of the NCCL watchdog, kept free of CUDA so that it is tested
// with a fake clock. A communicator registers each operation as it is queued (begin) and a
// monitor thread polls: operations that have completed are dropped, oldest first; the oldest
// one still pending past the timeout is returned, once, for the caller to report and abort.
//
// Invariant used: operations of one communicator run on one stream, so they complete in the
// order they were queued; a pending oldest operation means every later one is pending too, and
// only the oldest needs a completion query per poll.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace trainer {

struct WatchedOp {
  uint64_t seq = 0;     // 1-based, per communicator, in queue order
  std::string op;       // "all_reduce", "send", ...
  int peer_world = -1;  // world rank of the peer for send/recv, -1 for collectives
  size_t bytes = 0;
  double start_s = 0;   // clock reading when queued
  uint64_t handle = 0;  // the caller's completion handle (an event index)
};

class OpWatchdog {
 public:
  // group: "data", "tensor", "pipeline", ... (named in the report).
  OpWatchdog(std::string group, double timeout_s);

  // Registers an operation queued at now_s; returns its sequence number.
  uint64_t begin(const std::string& op, int peer_world, size_t bytes, double now_s, uint64_t handle);
  // Gives a registered operation its completion handle once it has one (0 = none yet: done()
  // is then not asked and the operation counts as pending).
  void attach(uint64_t seq, uint64_t handle);
  // Forgets a registered operation that was never queued (its issue failed and the error is
  // on its way to the caller), so that it is not reported later as a hang.
  void cancel(uint64_t seq);
  // Drops completed operations (done(handle) true; never asked for handle 0), oldest first, and returns the oldest pending
  // operation older than the timeout, the first time it is found (later polls return nothing
  // for it again). Thread-safe against begin().
  std::optional<WatchedOp> poll(double now_s, const std::function<bool(uint64_t handle)>& done);
  size_t in_flight() const;
  // Handles of every operation still registered (for releasing them at shutdown).
  std::deque<WatchedOp> drain();

  // "all_reduce #17 on the data group (4.0 MiB) did not complete within 300 s
  //  (parallel.timeout_s); waited 301 s" (names the peer's world rank for send/recv).
  std::string describe(const WatchedOp& op, double now_s) const;
  const std::string& group() const { return group_; }
  double timeout_s() const { return timeout_s_; }

 private:
  std::string group_;
  double timeout_s_;
  mutable std::mutex mutex_;
  std::deque<WatchedOp> pending_;
  uint64_t next_seq_ = 1;
  uint64_t reported_ = 0;  // seq of the op already returned by poll
};

}  // namespace trainer
