// One trainer per checkpoint directory: rank 0 holds checkpoint.dir's DirLock (data/dir_lock.h)
// for as long as the run lives.
#pragma once

#include <memory>
#include <string>

#include "data/dir_lock.h"
#include "parallel/comm.h"

namespace trainer {

// Collective: rank 0 takes the lock (and returns it; the other ranks get null). A refusal is an
// InputError on every rank, with the holder named on rank 0 (main prints rank 0's message).
std::unique_ptr<DirLock> lock_checkpoint_dir(const std::string& dir, Comm& world);

}  // namespace trainer
