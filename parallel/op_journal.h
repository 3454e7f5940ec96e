// OpJournal: this process's communication operations in flight, for hang reports. Every MpiComm
// of the process registers each operation when it starts and removes it when its wait returns;
// the watchdog (a wait past parallel.timeout_s), rank 0's request for reports and SIGUSR1 all
// print report(): what this rank waits for (op, group, sequence number, peer, bytes, how long),
// what else is in flight, and the last completed operation of each group.
// Invariants: sequence numbers count the operations of one communicator in the order they were
// started, so the n-th operation of a group has the same number on every member (a member
// waiting in #12 while another's last completed is #11 is the one that has not arrived).
// Thread-safe: the main thread registers, a reporting thread may read at any time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace trainer {

struct JournalEntry {
  std::string group;    // "data", "pipeline", ...
  uint64_t seq = 0;
  std::string op;       // "all_reduce", "recv", ...
  int peer_world = -1;  // send/recv: the peer's world rank
  size_t bytes = 0;
  double start_s = 0;
  bool waiting = false;  // the main thread is blocked in this operation's wait
};

class OpJournal {
 public:
  // Returns the entry's handle.
  uint64_t begin(const JournalEntry& entry);
  void set_waiting(uint64_t handle, bool waiting);
  void end(uint64_t handle);

  // Multi-line text for rank `rank` at clock reading now_s:
  //   rank 3: waiting 301.2 s in recv #12 on the pipeline group from rank 1 (4.0 KiB)
  //   rank 3: also in flight: send #11 on the pipeline group to rank 5 (4.0 KiB, 301.3 s)
  //   rank 3: last completed: data all_reduce #40, pipeline send #10
  std::string report(int rank, double now_s) const;
  // One line for rank 0's summary: "waits 301 s in recv #12 on pipeline from rank 1 (4.0 KiB)",
  // "no operation in flight (computing, or between steps)" or "in flight: ..." (none waited on).
  std::string summary(double now_s) const;

 private:
  mutable std::mutex mutex_;
  uint64_t next_ = 1;
  std::map<uint64_t, JournalEntry> open_;
  std::map<std::string, JournalEntry> last_done_;  // by group
};

// "recv #12 on the pipeline group from rank 1 (4.0 KiB)".
std::string describe_entry(const JournalEntry& e);

}  // namespace trainer
