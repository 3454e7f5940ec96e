// CheckpointLock (see checkpoint_lock.h).
#include "app/checkpoint/checkpoint_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "kernels/base/errors.h"
#include "parallel/comm_text.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

std::string read_holder(int fd) {
  char buf[512];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, size_t(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

std::string this_holder() {
  char host[256] = "unknown";
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  char when[64] = "";
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (::gmtime_r(&now, &tm)) std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return "pid " + std::to_string(::getpid()) + " on host " + host + " since " + when;
}

}  // namespace

CheckpointLock::CheckpointLock(const std::string& dir) : path_((fs::path(dir) / ".lock").string()) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw InputError("checkpoint.dir: " + dir + " is not writable: cannot create " + dir + ": " + ec.message() +
                     "; fix it or set checkpoint.dir to another directory");
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0)
    throw InputError("checkpoint.dir: " + dir + " is not writable: cannot open the lock file " + path_ + ": " +
                     std::strerror(errno) + "; fix it or set checkpoint.dir to another directory");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw InputError("checkpoint.dir: " + path_ + " is not a regular file; remove it");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw InputError("checkpoint.dir: " + dir + " is in use by another trainer (" +
                       (holder.empty() ? std::string("holder unknown") : holder) + "; lock file " + path_ +
                       "); wait for that run to end, stop it, or set checkpoint.dir to another directory");
    throw InputError("checkpoint.dir: cannot lock " + path_ + ": " + std::strerror(err));
  }
  stale_ = read_holder(fd_);
  const std::string me = this_holder() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != ssize_t(me.size()) ||
      ::fsync(fd_) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw InputError("checkpoint.dir: cannot write the lock file " + path_ + ": " + std::strerror(err));
  }
}

CheckpointLock::~CheckpointLock() {
  if (fd_ < 0) return;
  // Emptied, not deleted (see the header); closing releases the flock. A failure here leaves a
  // non-empty file that the next run reports as stale, which is the truth.
  if (::ftruncate(fd_, 0) == 0) ::fsync(fd_);
  ::close(fd_);
}

std::unique_ptr<CheckpointLock> lock_checkpoint_dir(const std::string& dir, Comm& world) {
  std::unique_ptr<CheckpointLock> lock;
  std::string error;
  if (world.rank() == 0) {
    try {
      lock = std::make_unique<CheckpointLock>(dir);
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
