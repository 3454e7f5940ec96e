// OpWatchdog (see op_watchdog.h).
#include "parallel/op_watchdog.h"

#include <cstdio>
#include <utility>

namespace trainer {

OpWatchdog::OpWatchdog(std::string group, double timeout_s) : group_(std::move(group)), timeout_s_(timeout_s) {}

uint64_t OpWatchdog::begin(const std::string& op, int peer_world, size_t bytes, double now_s, uint64_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t seq = next_seq_++;
  pending_.push_back({seq, op, peer_world, bytes, now_s, handle});
  return seq;
}

void OpWatchdog::attach(uint64_t seq, uint64_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (WatchedOp& op : pending_)
    if (op.seq == seq) op.handle = handle;
}

void OpWatchdog::cancel(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (it->seq == seq) {
      pending_.erase(it);
      return;
    }
}

std::optional<WatchedOp> OpWatchdog::poll(double now_s, const std::function<bool(uint64_t)>& done) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!pending_.empty()) {
    const WatchedOp front = pending_.front();
    // The query runs unlocked: it may block briefly (a driver call) and begin() must not wait.
    if (front.handle == 0) break;
    lock.unlock();
    const bool finished = done(front.handle);
    lock.lock();
    if (!finished) break;
    if (!pending_.empty() && pending_.front().seq == front.seq) pending_.pop_front();
  }
  if (pending_.empty()) return std::nullopt;
  const WatchedOp& oldest = pending_.front();
  if (now_s - oldest.start_s <= timeout_s_ || oldest.seq == reported_) return std::nullopt;
  reported_ = oldest.seq;
  return oldest;
}

size_t OpWatchdog::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

std::deque<WatchedOp> OpWatchdog::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::deque<WatchedOp> out;
  out.swap(pending_);
  return out;
}

std::string OpWatchdog::describe(const WatchedOp& op, double now_s) const {
  char size[32];
  if (op.bytes >= (size_t(1) << 20))
    std::snprintf(size, sizeof size, "%.1f MiB", double(op.bytes) / double(1 << 20));
  else
    std::snprintf(size, sizeof size, "%zu bytes", op.bytes);
  std::string peer;
  if (op.peer_world >= 0) peer = (op.op == "send" ? " to rank " : " from rank ") + std::to_string(op.peer_world);
  char tail[160];
  std::snprintf(tail, sizeof tail, " did not complete within %.0f s (parallel.timeout_s); waited %.0f s", timeout_s_,
                now_s - op.start_s);
  return op.op + " #" + std::to_string(op.seq) + " on the " + group_ + " group" + peer + " (" + size + ")" + tail;
}

}  // namespace trainer
