// File access for the data pipeline: read-only memory maps (shards are never copied whole
// into memory) and whole-file reads for small files. Failures are InputErrors naming the file
// and the system's reason. Writing goes through kernels/base/atomic_file.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainer {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps the whole file read-only; an empty file maps to size() == 0 and data() == nullptr.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  void release();
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

std::string read_file(const std::string& path);

}  // namespace trainer
