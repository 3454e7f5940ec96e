// Reading an input file of `data prepare` line by line, decompressing on the fly: plain,
// gzip (.gz, concatenated members too) or zstd (.zst, concatenated frames too), chosen by the
// file name. Memory is one read buffer plus the longest line, so a file of any size streams;
// a line longer than kMaxLineBytes is an InputError naming file and line (a file without
// newlines is not a JSONL corpus, and must not swallow the machine's memory).
// Errors (unreadable, corrupt or truncated compressed data) are InputErrors naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace trainer {

enum class Compression { none, gzip, zstd };

// By the name's last extension: .gz, .zst, anything else none.
Compression compression_of(const std::string& path);

constexpr size_t kMaxLineBytes = size_t{1} << 30;

class LineReader {
 public:
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line, its newline included (the last line of a file may lack one); false at the
  // end. The view is valid until the next call.
  bool next(std::string_view* line);
  int64_t line_number() const { return line_number_; }  // of the line last returned, 1-based
  int64_t compressed_bytes_read() const;  // of the file itself, for progress
  const std::string& path() const { return path_; }

  class Source;  // the decompressor (line_reader.cpp)

 private:
  bool refill();
  std::string path_;
  std::unique_ptr<Source> source_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

}  // namespace trainer
