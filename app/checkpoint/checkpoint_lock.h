// CheckpointLock: one trainer per checkpoint directory. Rank 0 holds an exclusive flock(2) on
// <dir>/.lock for as long as the run lives; the file says who holds it ("pid P on host H since
// T"), so a second trainer pointed at the same directory stops before it writes anything, with
// exit code 2 naming the holder.
//
// Invariants: the lock file is never deleted (deleting it would let two processes lock two
// different files of one name); a clean release empties it, so a non-empty file that can be
// locked was left by a process that died holding it: a stale lock, taken over and reported.
// The kernel drops a flock when its process dies, so a crashed run never blocks the next.
#pragma once

#include <memory>
#include <string>

#include "parallel/comm.h"

namespace trainer {

class CheckpointLock {
 public:
  // Creates dir if needed and takes the lock, or throws InputError naming the holder.
  explicit CheckpointLock(const std::string& dir);
  ~CheckpointLock();
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;

  // "pid P on host H since T" of a holder that died without releasing, or "".
  const std::string& stale_holder() const { return stale_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string stale_;
};

// Collective: rank 0 takes the lock (and returns it; the other ranks get null). A refusal is an
// InputError on every rank, with the holder named on rank 0 (main prints rank 0's message).
std::unique_ptr<CheckpointLock> lock_checkpoint_dir(const std::string& dir, Comm& world);

}  // namespace trainer
