// Opening checkpoint files and reading the manifest safely (see checkpoint_open.h).
#include "app/checkpoint/checkpoint_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kernels/base/errors.h"

namespace trainer {

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

}  // namespace

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
    problem_ = std::string("not a regular file (") + file_kind(st.st_mode) + ")";
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

std::string read_manifest_text(const std::string& path) {
  RegularFile f(path);
  if (!f.ok()) {
    if (f.open_errno() == ENOENT) throw InputError(path + ": missing (the checkpoint is incomplete)");
    throw InputError(path + ": " + f.problem() + "; a checkpoint manifest must be a regular file");
  }
  if (f.size() > kMaxManifestBytes)
    throw InputError(path + ": " + std::to_string(f.size()) + " bytes; a checkpoint manifest must be at most " +
                     std::to_string(kMaxManifestBytes) + " bytes (64 MiB)");
  std::string text(size_t(f.size()), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(f.fd(), &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path + ": read error: " + std::strerror(errno));
    if (n == 0) break;  // shrank while being read: parse what is there
    got += size_t(n);
  }
  text.resize(got);
  return text;
}

}  // namespace trainer
