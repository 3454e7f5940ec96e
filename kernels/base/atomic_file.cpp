// OutputFile, sync_directory and write_file_atomically (see atomic_file.h).
#include "kernels/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "kernels/base/errors.h"
#include "kernels/base/output_target.h"

namespace trainer {
namespace {

[[noreturn]] void fail_io(const char* step, const std::string& path, int err) {
  throw InputError(std::string("cannot ") + step + " " + path + ": " + std::strerror(err));
}

// Runs one step of an atomic write; an InputError it throws gains the atomic write's prefix.
template <class F>
void step(const std::string& prefix, F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    throw InputError(prefix + e.what());
  }
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  // Looked at before the open, so a device is never opened (a tape rewinds on open) and a
  // FIFO never waited on; fstat below settles it for whatever the open found.
  const std::string problem = non_regular_target_problem(path_);
  if (!problem.empty()) throw InputError("cannot create " + path_ + ": " + problem);
  // No O_TRUNC until fstat has shown a regular file; O_NONBLOCK: a FIFO that appears in
  // between fails the open instead of blocking it; O_NOFOLLOW: the program's own temporary and
  // checkpoint files are never links, and one planted there must not redirect the write.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0644);
  if (fd < 0) fail_io("create", path_, errno);
  // A throwing constructor runs no destructor: the descriptor is closed here on every failure.
  auto refuse = [&](const char* what_failed, int err, const std::string& reason) {
    ::close(fd);
    if (!reason.empty()) throw InputError("cannot create " + path_ + ": " + reason);
    fail_io(what_failed, path_, err);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) refuse("stat", errno, "");
  if (!S_ISREG(st.st_mode)) refuse("", 0, non_regular_target_problem(path_));
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) refuse("clear O_NONBLOCK on", errno, "");
  if (::ftruncate(fd, 0) != 0) refuse("truncate", errno, "");
  fd_ = fd;
}

OutputFile::~OutputFile() {
  // An unfinished file is being abandoned (an error is on its way): its close status says
  // nothing the caller still needs.
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_io("write", path_, n < 0 ? errno : EIO);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void OutputFile::finish() {
  if (::fsync(fd_) != 0) fail_io("fsync", path_, errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail_io("close", path_, errno);
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_io("open", dir, errno);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail_io("fsync", dir, err);
  }
  if (::close(fd) != 0) fail_io("close", dir, errno);
}

void write_checkpoint_file_atomically(const std::string& path, const std::string& what,
                                      const std::function<void(const AtomicWriteFn& write)>& body) {
  const std::filesystem::path target(path);
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  const std::string tmp =
      (target.parent_path() / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  const std::string prefix = "cannot write " + what + " '" + path + "': ";
  const std::string problem = non_regular_target_problem(path);
  if (!problem.empty()) throw InputError(prefix + problem);
  // A temporary left by a crashed process with the same pid is ours to replace; a link planted
  // there would otherwise redirect the write.
  step(prefix, [&] {
    if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) fail_io("remove the stale temporary", tmp, errno);
  });
  std::optional<OutputFile> file;
  step(prefix, [&] { file.emplace(tmp); });
  try {
    body([&](const void* data, size_t bytes) { step(prefix, [&] { file->write(data, bytes); }); });
    step(prefix, [&] { file->finish(); });
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      throw InputError(prefix + "cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
    }
  } catch (...) {
    file.reset();
    // Best effort: the error being rethrown is the one to report, not a failed clean-up.
    ::unlink(tmp.c_str());
    throw;
  }
  step(prefix, [&] { sync_directory(dir); });
}

void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(const AtomicWriteFn& write)>& body) {
  check_output_target(path, what);
  create_parent_folders(path, what);
  write_checkpoint_file_atomically(path, what, body);
}

void write_file_atomically(const std::string& path, const std::string& what, std::string_view contents) {
  write_file_atomically(path, what, [&](const AtomicWriteFn& write) { write(contents.data(), contents.size()); });
}

void write_checkpoint_file_atomically(const std::string& path, const std::string& what, std::string_view contents) {
  write_checkpoint_file_atomically(path, what,
                                   [&](const AtomicWriteFn& write) { write(contents.data(), contents.size()); });
}

}  // namespace trainer
