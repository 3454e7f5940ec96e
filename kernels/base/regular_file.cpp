// Opening regular files only (see regular_file.h).
#include "kernels/base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernels/base/errors.h"

namespace trainer {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string describe_path_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return kind_of(st.st_mode);
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return "a dangling or looping symbolic link";
  return "missing";
}

int open_regular_file(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError(what + " '" + path + "': cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(what + " '" + path + "': cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(what + " '" + path + "' is " + kind_of(st.st_mode) + ", not a regular file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(what + " '" + path + "': cannot clear O_NONBLOCK: " + std::strerror(err));
  }
  return fd;
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
