// Memory maps, whole-file reads and atomic writes (see file_io.h).
#include "data/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kernels/base/errors.h"

namespace trainer {
namespace {

[[noreturn]] void fail_io(const std::string& what, const std::string& path, int err) {
  throw InputError(fmt::format("{} '{}': {}", what, path, std::strerror(err)));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) fail_io("cannot open", path, errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail_io("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("'{}' is not a regular file", path));
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (p == MAP_FAILED) fail_io("cannot memory-map", path, errno);
  data_ = static_cast<const char*>(p);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void MappedFile::release() {
  // munmap of a mapping we created cannot fail for a valid (pointer, length) pair.
  if (data_) ::munmap(const_cast<char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

std::string read_file(const std::string& path) {
  MappedFile f(path);
  return std::string(f.view());
}

void write_file_atomic(const std::string& path, const std::vector<std::string_view>& parts) {
  const std::filesystem::path target(path);
  const std::filesystem::path tmp =
      target.parent_path() / ("." + target.filename().string() + ".tmp");
  Fd f;
  f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f.fd < 0) fail_io("cannot create", tmp.string(), errno);
  for (std::string_view part : parts) {
    const char* p = part.data();
    size_t left = part.size();
    while (left > 0) {
      const ssize_t n = ::write(f.fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::unlink(tmp.c_str());
        fail_io("cannot write", tmp.string(), err);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (::fsync(f.fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail_io("cannot flush", tmp.string(), err);
  }
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail_io("cannot close", tmp.string(), err);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail_io("cannot rename temp file to", path, err);
  }
}

}  // namespace trainer
