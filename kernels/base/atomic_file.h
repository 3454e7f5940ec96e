// Writing files durably, and the one atomic file writer of the program.
// OutputFile: one file opened for writing (created or truncated, mode 0644 less the umask);
//   a path that exists and is not a regular file (a device, a FIFO, a directory) is refused
//   without being opened for long enough to matter (never truncated, never waited on), and so
//   is a symbolic link (these are the program's own temporary and checkpoint files).
//   write() writes all its bytes (a write interrupted by a signal is retried); finish() fsyncs
//   and closes. Each failure is an InputError "cannot <create|write|fsync|close> PATH: REASON"
//   with the system's reason. A file destroyed before finish() is closed, not synced.
// sync_directory: fsyncs a directory, so the renames and creations in it survive a crash.
// write_file_atomically: `body` writes the new contents into a temporary file in PATH's own
//   directory (".NAME.tmp.PID": hidden from globs, one per process), which is fsynced, closed
//   and renamed over PATH; then the directory is fsynced. A reader sees either the old file or
//   the whole new one, also after a crash. Any failure, including an exception thrown by
//   `body`, removes the temporary file and leaves PATH as it was; the writer's own failures
//   are InputErrors "cannot write WHAT 'PATH': <the failed step, naming its file>: REASON".
//   Before anything is written, the target is checked (output_target.h): one that exists and
//   is not a regular file, or lies inside a checkpoint, is refused; then missing parent
//   folders are created (output_target.h's one rule for output paths).
// write_checkpoint_file_atomically: the same, for the checkpoint writer's own files in a
//   checkpoint directory (`latest`); only the checkpoint rule is skipped.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace trainer {

class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t bytes);
  // fsync, then close; the file must not be written afterwards.
  void finish();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

void sync_directory(const std::string& dir);

// Appends bytes to the file being written.
using AtomicWriteFn = std::function<void(const void* data, size_t bytes)>;

// `what` says what the file is in messages ("llm.c model file", "token shard").
void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(const AtomicWriteFn& write)>& body);
void write_file_atomically(const std::string& path, const std::string& what, std::string_view contents);

void write_checkpoint_file_atomically(const std::string& path, const std::string& what,
                                      const std::function<void(const AtomicWriteFn& write)>& body);
void write_checkpoint_file_atomically(const std::string& path, const std::string& what, std::string_view contents);

}  // namespace trainer
