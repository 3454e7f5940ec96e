// DirLock (see dir_lock.h).
#include "data/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

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

std::string this_holder(const std::string& what) {
  char host[256] = "unknown";
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  char when[64] = "";
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (::gmtime_r(&now, &tm)) std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return what + ", pid " + std::to_string(::getpid()) + " on host " + host + " since " + when;
}

}  // namespace

DirLock::DirLock(const std::string& dir, const DirLockUse& use) : path_((fs::path(dir) / ".lock").string()) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw InputError(use.setting + ": " + dir + " is not writable: cannot create " + dir + ": " + ec.message() +
                     "; fix it or set " + use.setting + " to another directory");
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0)
    throw InputError(use.setting + ": " + dir + " is not writable: cannot open the lock file " + path_ + ": " +
                     std::strerror(errno) + "; fix it or set " + use.setting + " to another directory");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw InputError(use.setting + ": " + path_ + " is not a regular file; remove it");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw InputError(use.setting + ": " + dir + " is in use by " +
                       (holder.empty() ? std::string("another process (holder unknown)") : excerpt(holder)) +
                       " (lock file " + path_ + "); wait for that run to end, stop it, or set " + use.setting +
                       " to another directory");
    throw InputError(use.setting + ": cannot lock " + path_ + ": " + std::strerror(err));
  }
  stale_ = excerpt(read_holder(fd_));
  const std::string me = this_holder(use.holder) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != ssize_t(me.size()) ||
      ::fsync(fd_) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw InputError(use.setting + ": cannot write the lock file " + path_ + ": " + std::strerror(err));
  }
}

DirLock::~DirLock() {
  if (fd_ < 0) return;
  // Emptied, not deleted (see the header); closing releases the flock. A failure here leaves a
  // non-empty file that the next run reports as stale, which is the truth.
  if (::ftruncate(fd_, 0) == 0) ::fsync(fd_);
  ::close(fd_);
}

}  // namespace trainer
