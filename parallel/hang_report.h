// HangReporter: what every rank says when communication hangs, and on SIGUSR1.
// - A wait past parallel.timeout_s (MpiComm) calls timed_out(): the rank prints its journal
//   (op_journal.h: what it waits for, what else is in flight, the last completed operation per
//   group). Rank 0 then asks every other rank for its one-line state over a communicator of its
//   own, waits up to grace_s for the answers and prints a one-screen summary of who waits for
//   whom (ranks that do not answer are named: dead, stopped, or busy outside communication)
//   before it aborts the job; another rank sends its line to rank 0 and leaves rank 0 the time
//   to come to its own timeout (timeout_s + 2 grace_s) before it aborts the job itself.
// - Every wait polls for rank 0's request (poll()), so ranks whose own timeout has not come yet
//   answer too, printing their journal.
// - SIGUSR1 prints this rank's journal and training goes on. The handler only sets a flag (the
//   one process-wide atomic of this file, which a signal handler cannot do without); a thread of
//   this class prints it. It makes no MPI call (MPI runs FUNNELED: the main thread only).
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parallel/op_journal.h"

namespace trainer {

class HangReporter {
 public:
  explicit HangReporter(double grace_s);
  ~HangReporter();
  HangReporter(const HangReporter&) = delete;
  HangReporter& operator=(const HangReporter&) = delete;

  OpJournal& journal() { return journal_; }
  // "rank 3 (data 1, tensor 0, pipeline 1)" once the grid is known; "rank 3" before.
  void set_label(const std::string& label);
  // The wait on `what` passed timeout_s: report as above and abort the job (exit code 3).
  [[noreturn]] void timed_out(const std::string& what, double timeout_s);
  // Answers rank 0's request for a report, if one has come.
  void poll();

 private:
  std::string label() const;
  void print_journal(const char* why) const;
  void watch_signal();

  double grace_s_;
  int rank_ = 0;
  int size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  OpJournal journal_;
  mutable std::mutex label_mutex_;
  std::string label_;
  std::vector<MPI_Request> answers_;  // this rank's pending answers to rank 0
  std::vector<std::unique_ptr<char[]>> answer_lines_;  // their buffers
  std::atomic<bool> stop_{false};
  std::thread signal_thread_;
};

// Seconds on the clock the journal uses.
double journal_clock_s();

}  // namespace trainer
