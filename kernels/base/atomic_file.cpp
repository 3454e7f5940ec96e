// OutputFile, sync_directory and write_file_atomically (see atomic_file.h).
#include "kernels/base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "kernels/base/errors.h"

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
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_io("create", path_, errno);
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

void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(const AtomicWriteFn& write)>& body) {
  const std::filesystem::path target(path);
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  const std::string tmp =
      (target.parent_path() / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  const std::string prefix = "cannot write " + what + " '" + path + "': ";
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

void write_file_atomically(const std::string& path, const std::string& what, std::string_view contents) {
  write_file_atomically(path, what, [&](const AtomicWriteFn& write) { write(contents.data(), contents.size()); });
}

}  // namespace trainer
