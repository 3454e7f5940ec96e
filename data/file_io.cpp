// Memory maps and whole-file reads (see file_io.h).
#include "data/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cerrno>
#include <cstring>

#include "kernels/base/errors.h"
#include "kernels/base/regular_file.h"
#include "kernels/base/excerpt.h"

namespace trainer {
namespace {

[[noreturn]] void fail_io(const std::string& what, const std::string& path, int err) {
  throw InputError(fmt::format("{} '{}': {}", what, excerpt(path), std::strerror(err)));
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
  f.fd = open_regular_file(path, "file");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail_io("cannot stat", path, errno);
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

}  // namespace trainer
