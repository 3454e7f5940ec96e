// Line reading with gzip (zlib) and zstd decompression (see line_reader.h).
#include "data/line_reader.h"

#include <fmt/core.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/base/errors.h"

namespace trainer {

Compression compression_of(const std::string& path) {
  auto ends = [&](std::string_view s) {
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".gz")) return Compression::gzip;
  if (ends(".zst")) return Compression::zstd;
  return Compression::none;
}

namespace {
constexpr size_t kChunk = size_t{1} << 20;
}

// Reads decompressed bytes: read() returns how many it put into out (0 at the end).
class LineReader::Source {
 public:
  virtual ~Source() = default;
  virtual size_t read(char* out, size_t cap) = 0;
  virtual int64_t consumed() const = 0;
};

namespace {

class PlainSource : public LineReader::Source {
 public:
  explicit PlainSource(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    if (!f_) throw InputError(fmt::format("cannot open input '{}': {}", path, std::strerror(errno)));
  }
  ~PlainSource() override { std::fclose(f_); }
  size_t read(char* out, size_t cap) override {
    const size_t n = std::fread(out, 1, cap, f_);
    if (n == 0 && std::ferror(f_))
      throw InputError(fmt::format("cannot read input '{}': {}", path_, std::strerror(errno)));
    consumed_ += static_cast<int64_t>(n);
    return n;
  }
  int64_t consumed() const override { return consumed_; }

 private:
  std::string path_;
  std::FILE* f_;
  int64_t consumed_ = 0;
};

class GzipSource : public LineReader::Source {
 public:
  explicit GzipSource(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (!f_) throw InputError(fmt::format("cannot open input '{}': {}", path, std::strerror(errno)));
    gzbuffer(f_, static_cast<unsigned>(kChunk));
    // zlib would read a file without gzip's header as plain text, without a word: a .gz that is
    // not gzip is refused, as a truncated one is.
    if (gzdirect(f_) == 1) {
      gzclose(f_);
      throw InputError(fmt::format("input '{}' is named .gz but holds no gzip data (it does not start with gzip's "
                                   "bytes 1f 8b); valid: gzip it, or drop .gz from its name",
                                   path));
    }
  }
  ~GzipSource() override { gzclose(f_); }
  size_t read(char* out, size_t cap) override {
    const int n = gzread(f_, out, static_cast<unsigned>(cap));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(f_, &code);
      throw InputError(fmt::format("cannot decompress '{}' (gzip): {}", path_, msg));
    }
    if (n == 0) {  // gzread reports a truncated stream only through gzerror
      int code = 0;
      const char* msg = gzerror(f_, &code);
      if (code != Z_OK) throw InputError(fmt::format("cannot decompress '{}' (gzip): {}", path_, msg));
    }
    return static_cast<size_t>(n);
  }
  int64_t consumed() const override { return static_cast<int64_t>(gzoffset(f_)); }

 private:
  std::string path_;
  gzFile f_;
};

class ZstdSource : public LineReader::Source {
 public:
  explicit ZstdSource(const std::string& path)
      : path_(path), file_(path), ctx_(ZSTD_createDCtx()), in_buf_(ZSTD_DStreamInSize()) {
    if (!ctx_) throw InputError(fmt::format("cannot decompress '{}': out of memory", path));
  }
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }
  size_t read(char* out, size_t cap) override {
    ZSTD_outBuffer o{out, cap, 0};
    while (o.pos == 0) {
      if (in_.pos == in_.size) {
        const size_t n = file_.read(in_buf_.data(), in_buf_.size());
        if (n == 0) {
          if (!frame_done_)
            throw InputError(fmt::format("cannot decompress '{}' (zstd): the file ends inside a frame",
                                         file_path()));
          return 0;
        }
        in_ = {in_buf_.data(), n, 0};
      }
      const size_t r = ZSTD_decompressStream(ctx_, &o, &in_);
      if (ZSTD_isError(r))
        throw InputError(fmt::format("cannot decompress '{}' (zstd): {}", file_path(), ZSTD_getErrorName(r)));
      frame_done_ = r == 0;
    }
    return o.pos;
  }
  int64_t consumed() const override { return file_.consumed(); }

 private:
  const std::string& file_path() const { return path_; }
  std::string path_;
  PlainSource file_;
  ZSTD_DCtx* ctx_;
  std::vector<char> in_buf_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  bool frame_done_ = true;  // an empty file is no frame, and no error
};

std::unique_ptr<LineReader::Source> open_source(const std::string& path) {
  switch (compression_of(path)) {
    case Compression::gzip: return std::make_unique<GzipSource>(path);
    case Compression::zstd: return std::make_unique<ZstdSource>(path);
    case Compression::none: break;
  }
  return std::make_unique<PlainSource>(path);
}

}  // namespace

LineReader::LineReader(const std::string& path) : path_(path), source_(open_source(path)) {}
LineReader::~LineReader() = default;

int64_t LineReader::compressed_bytes_read() const { return source_->consumed(); }

bool LineReader::refill() {
  if (eof_) return false;
  buf_.erase(0, pos_);
  pos_ = 0;
  const size_t old = buf_.size();
  buf_.resize(old + kChunk);
  const size_t n = source_->read(&buf_[old], kChunk);
  buf_.resize(old + n);
  if (n == 0) eof_ = true;
  return n > 0;
}

bool LineReader::next(std::string_view* line) {
  size_t scanned = pos_;
  while (true) {
    const size_t nl = buf_.find('\n', scanned);
    if (nl != std::string::npos) {
      *line = std::string_view(buf_).substr(pos_, nl + 1 - pos_);
      pos_ = nl + 1;
      ++line_number_;
      return true;
    }
    if (buf_.size() - pos_ > kMaxLineBytes)
      throw InputError(fmt::format("{}:{}: a line longer than {} bytes", path_, line_number_ + 1,
                                   kMaxLineBytes));
    scanned = buf_.size() - pos_;  // offsets move by pos_ in refill
    if (!refill()) {
      if (pos_ == buf_.size()) return false;
      *line = std::string_view(buf_).substr(pos_);
      pos_ = buf_.size();
      ++line_number_;
      return true;
    }
  }
}

}  // namespace trainer
