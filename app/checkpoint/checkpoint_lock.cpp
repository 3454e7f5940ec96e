// lock_checkpoint_dir (see checkpoint_lock.h).
#include "app/checkpoint/checkpoint_lock.h"

#include "kernels/base/errors.h"
#include "parallel/comm_text.h"

namespace trainer {

std::unique_ptr<DirLock> lock_checkpoint_dir(const std::string& dir, Comm& world) {
  std::unique_ptr<DirLock> lock;
  std::string error;
  if (world.rank() == 0) {
    try {
      lock = std::make_unique<DirLock>(dir, DirLockUse{"checkpoint.dir", "trainer"});
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  // Every rank stops with rank 0's own message.
  error = broadcast_text(world, error, 0);
  if (!error.empty()) throw InputError(error);
  return lock;
}

}  // namespace trainer
