// Opening regular files only (see regular_file.h).
#include "kernels/base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

}  // namespace

std::string describe_path_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return kind_of(st.st_mode);
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return "a dangling or looping symbolic link";
  return "missing";
}

RegularFile::RegularFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    open_errno_ = errno;
    problem_ = std::string("cannot open: ") + std::strerror(open_errno_);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problem_ = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    problem_ = std::string("not a regular file (") + kind_of(st.st_mode) + ")";
    ::close(fd);
    return;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    problem_ = std::string("cannot clear O_NONBLOCK: ") + std::strerror(errno);
    ::close(fd);
    return;
  }
  fd_ = fd;
  size_ = int64_t(st.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(other.fd_), open_errno_(other.open_errno_), size_(other.size_), problem_(std::move(other.problem_)) {
  other.fd_ = -1;
}

int RegularFile::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

int open_regular_file(const std::string& path, const std::string& what) {
  RegularFile f(path);
  if (!f.ok()) throw InputError(what + " '" + excerpt(path) + "': " + f.problem());
  return f.release();
}

std::string read_regular_file(const std::string& path, const std::string& what, int64_t max_bytes) {
  const int fd = open_regular_file(path, what);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size > max_bytes) {
    const int64_t size = st.st_size;
    ::close(fd);
    throw InputError(what + " '" + path + "' is " + std::to_string(size) + " bytes; the limit is " +
                     std::to_string(max_bytes));
  }
  std::string out(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, &out[done], out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      throw InputError(what + " '" + path + "': " + (n < 0 ? std::string("read error: ") + std::strerror(err)
                                                             : std::string("changed size while being read")));
    }
    done += size_t(n);
  }
  ::close(fd);
  return out;
}

}  // namespace trainer
