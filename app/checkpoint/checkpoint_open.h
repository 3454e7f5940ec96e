// Opening what a checkpoint names without trusting it: only regular files (after following
// links) are opened, and a FIFO, device, socket or directory is refused without blocking (the
// open is non-blocking, the check is fstat on the descriptor, and blocking mode is restored
// after); manifest.yaml is read whole only when it is a regular file of at most
// kMaxManifestBytes, so a FIFO or /dev/zero in its place can neither hang nor exhaust memory.
#pragma once

#include <cstdint>
#include <string>

namespace trainer {

// 64 MiB: a manifest lists one line per file and per stored piece, far below this for any
// model the limits in checkpoint_validate.h allow.
constexpr int64_t kMaxManifestBytes = int64_t(64) << 20;

// A read-only descriptor of a regular file, closed on destruction; when open() fails, fd() is
// -1 and problem() says why ("cannot open: ...", "not a regular file (a FIFO)", ...).
class RegularFile {
 public:
  explicit RegularFile(const std::string& path);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int64_t size() const { return size_; }
  const std::string& problem() const { return problem_; }
  // The errno of a failed open (ENOENT: missing), 0 otherwise.
  int open_errno() const { return open_errno_; }

 private:
  int fd_ = -1;
  int open_errno_ = 0;
  int64_t size_ = -1;
  std::string problem_;
};

// The text of manifest file `path`; a missing, non-regular, oversized or unreadable manifest
// is an InputError naming it.
std::string read_manifest_text(const std::string& path);

}  // namespace trainer
