// DirLock: one writer per output directory (a checkpoint.dir, a `data prepare --out`). The
// holder keeps an exclusive flock(2) on <dir>/.lock for as long as it lives; the file says who
// holds it ("data prepare, pid P on host H since T"), so a second writer pointed at the same
// directory stops before it writes anything, with exit code 2 naming the holder.
//
// Invariants: the lock file is never deleted (deleting it would let two processes lock two
// different files of one name); a clean release empties it, so a non-empty file that can be
// locked was left by a process that died holding it: a stale lock, taken over and reported.
// The kernel drops a flock when its process dies, so a crashed run never blocks the next.
// Both users share the name .lock, so a checkpoint run and a prepare never write one folder.
#pragma once

#include <string>

namespace trainer {

// Who takes a lock, for its messages and the lock file.
struct DirLockUse {
  std::string setting;  // names the directory: "checkpoint.dir", "data prepare --out"
  std::string holder;   // what holds it: "trainer", "data prepare"
};

class DirLock {
 public:
  // Creates dir if needed and takes the lock, or throws InputError naming the holder.
  DirLock(const std::string& dir, const DirLockUse& use);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  // "... pid P on host H since T" of a holder that died without releasing, or "".
  const std::string& stale_holder() const { return stale_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string stale_;
};

}  // namespace trainer
