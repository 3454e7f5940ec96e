// Opening files that must be regular files: a FIFO, a device (/dev/zero, /dev/urandom), a
// socket or a directory named where a recipe, tokenizer, shard or model file belongs is
// refused at once instead of blocking forever in open(2) or reading without end. Links are
// followed (a link to a regular file is fine); a dangling link or a loop fails in open(2) with
// the system's reason.
//
// The open uses O_NONBLOCK, so opening a FIFO without a writer returns instead of waiting;
// the flag is cleared again once fstat(2) has shown a regular file.
#pragma once

#include <cstdint>
#include <string>

namespace trainer {

// A read-only descriptor of a regular file, closed on destruction; when the open fails, fd()
// is -1 and problem() says why ("cannot open: ...", "not a regular file (a FIFO)", ...).
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
  // Hands the descriptor to the caller, who closes it.
  int release();

 private:
  int fd_ = -1;
  int open_errno_ = 0;
  int64_t size_ = -1;
  std::string problem_;
};

// A read-only descriptor of the regular file at path (the caller closes it), or InputError
// "<what> '<path>': <problem>" (RegularFile's problem: what the path is, or why it failed).
int open_regular_file(const std::string& path, const std::string& what);

// What is at path, for messages: "a regular file", "a directory", "a FIFO", "a character
// device", ..., or "a dangling or looping symbolic link" / "missing".
std::string describe_path_kind(const std::string& path);

// The whole file, at most max_bytes (a larger one is an InputError naming both sizes).
std::string read_regular_file(const std::string& path, const std::string& what, int64_t max_bytes);

}  // namespace trainer
