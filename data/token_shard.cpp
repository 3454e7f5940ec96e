// llm.c token shards: checked opening and atomic writing (see token_shard.h).
#include "data/token_shard.h"

#include <fmt/core.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "kernels/base/atomic_file.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"

namespace trainer {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "shards are little-endian and read in place; a big-endian host needs byte swaps");

TokenWidth token_width_for_vocab(int64_t vocab_size) {
  return vocab_size <= 65536 ? TokenWidth::u16 : TokenWidth::u32;
}

namespace {

// Tokens per chunk of a scan: 1 MiB of uint32 tokens.
constexpr int64_t kScanChunk = int64_t{1} << 18;

template <class T>
void widen(const char* bytes, int64_t n, int32_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes + i * int64_t{sizeof(T)}, sizeof(T));
    out[i] = static_cast<int32_t>(v);
  }
}

InputError changed_shard(const std::string& path, int64_t now, int64_t checked) {
  return InputError(fmt::format(
      "token shard '{}' changed while in use: it now has {} bytes, {} when it was checked "
      "(truncated or rewritten in place during the run? write new shards to another folder and "
      "rename them into place)",
      path, now, checked));
}

}  // namespace

ShardLayout check_shard_header(const char* header_bytes, int64_t file_bytes, const std::string& path) {
  if (file_bytes < int64_t{kShardHeaderBytes})
    throw InputError(fmt::format(
        "token shard '{}' has {} bytes, less than the 1024-byte header of llm.c's format", path,
        file_bytes));
  int32_t header[kShardHeaderInts];
  std::memcpy(header, header_bytes, kShardHeaderBytes);
  const int32_t magic = header[0], version = header[1], count = header[2];
  ShardLayout layout;
  if (magic == kShardMagicU16) {
    layout.width = TokenWidth::u16;
    if (version != kShardVersionU16)
      throw InputError(fmt::format("token shard '{}': version {} is not supported for magic {} "
                                   "(valid: {})", path, version, magic, kShardVersionU16));
  } else if (magic == kShardMagicU32) {
    layout.width = TokenWidth::u32;
    if (version != kShardVersionU32)
      throw InputError(fmt::format("token shard '{}': version {} is not supported for magic {} "
                                   "(valid: {})", path, version, magic, kShardVersionU32));
  } else {
    throw InputError(fmt::format("token shard '{}': magic number {} is not a token shard's "
                                 "(valid: {} for uint16 tokens, {} for uint32 tokens)",
                                 path, magic, kShardMagicU16, kShardMagicU32));
  }
  if (count < 0)
    throw InputError(fmt::format("token shard '{}': negative token count {}", path, count));
  layout.tokens = count;
  const int64_t width = int64_t(token_width_bytes(layout.width));
  const int64_t expected = int64_t{kShardHeaderBytes} + width * layout.tokens;
  if (file_bytes != expected)
    throw InputError(fmt::format("token shard '{}' has {} bytes, but its header says {} tokens "
                                 "of {} bytes, which is {} bytes (truncated or wrong file?)",
                                 path, file_bytes, count, width, expected));
  return layout;
}

void check_token_ids(const int32_t* ids, int64_t n, int64_t first, int64_t vocab_size, const std::string& path) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || int64_t{ids[i]} >= vocab_size)
      throw InputError(fmt::format(
          "token shard '{}': token {} at position {} is not below the vocabulary size {} "
          "(shards made with another tokenizer?)",
          path, static_cast<uint32_t>(ids[i]), first + i, vocab_size));
}

ShardLayout check_shard_bytes(std::string_view bytes, const std::string& path, int64_t vocab_size) {
  const ShardLayout layout = check_shard_header(bytes.data(), int64_t(bytes.size()), path);
  if (vocab_size <= 0) return layout;
  const char* body = bytes.data() + kShardHeaderBytes;
  std::vector<int32_t> ids(static_cast<size_t>(std::min(kScanChunk, layout.tokens)));
  for (int64_t first = 0; first < layout.tokens; first += kScanChunk) {
    const int64_t n = std::min(kScanChunk, layout.tokens - first);
    if (layout.width == TokenWidth::u16)
      widen<uint16_t>(body + first * 2, n, ids.data());
    else
      widen<uint32_t>(body + first * 4, n, ids.data());
    check_token_ids(ids.data(), n, first, vocab_size, path);
  }
  return layout;
}

Shard::Shard(const std::string& path, int64_t vocab_size) : path_(path), file_(path) {
  if (!file_.ok()) throw InputError(fmt::format("token shard '{}': {}", path, file_.problem()));
  char header[kShardHeaderBytes] = {};
  if (file_.size() >= int64_t{kShardHeaderBytes}) read_at(0, kShardHeaderBytes, header);
  const ShardLayout layout = check_shard_header(header, file_.size(), path);
  count_ = layout.tokens;
  width_ = layout.width;
  if (vocab_size > 0)
    scan([&](const int32_t* ids, int64_t n, int64_t first) { check_token_ids(ids, n, first, vocab_size, path); });
}

void Shard::read_at(int64_t offset, size_t bytes, void* out) const {
  char* p = static_cast<char*>(out);
  off_t at = static_cast<off_t>(offset);
  size_t left = bytes;
  while (left > 0) {
    const ssize_t got = ::pread(file_.fd(), p, left, at);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw InputError(fmt::format("token shard '{}': cannot read: {}", path_, std::strerror(errno)));
    if (got == 0) {
      struct stat st {};
      const int64_t now = ::fstat(file_.fd(), &st) == 0 ? int64_t(st.st_size) : -1;
      throw changed_shard(path_, now, file_.size());
    }
    p += got;
    at += got;
    left -= static_cast<size_t>(got);
  }
}

void Shard::check_unchanged() const {
  struct stat st {};
  if (::fstat(file_.fd(), &st) != 0)
    throw InputError(fmt::format("token shard '{}': cannot stat: {}", path_, std::strerror(errno)));
  if (int64_t(st.st_size) != file_.size())
    throw changed_shard(path_, int64_t(st.st_size), file_.size());
}

int32_t Shard::token(int64_t i) const {
  int32_t out = 0;
  read(i, 1, &out);
  return out;
}

void Shard::read(int64_t first, int64_t n, int32_t* out) const {
  TRAINER_CHECK(first >= 0 && n >= 0 && first + n <= count_,
                fmt::format("read of [{}, {}) outside shard '{}' of {} tokens", first, first + n,
                            path(), count_));
  const int64_t w = static_cast<int64_t>(token_width_bytes(width_));
  if (w == 4) {  // uint32 ids below 2^31 (checked against the vocabulary) read in place
    read_at(int64_t{kShardHeaderBytes} + first * 4, static_cast<size_t>(n * 4), out);
    return;
  }
  // uint16: read into the upper half of out, then widen from the front (never overtaking).
  char* raw = reinterpret_cast<char*>(out) + n * 2;
  read_at(int64_t{kShardHeaderBytes} + first * 2, static_cast<size_t>(n * 2), raw);
  widen<uint16_t>(raw, n, out);
}

void Shard::scan(const std::function<void(const int32_t*, int64_t, int64_t)>& fn) const {
  std::vector<int32_t> buf(static_cast<size_t>(std::min(kScanChunk, count_)));
  for (int64_t first = 0; first < count_; first += kScanChunk) {
    const int64_t n = std::min(kScanChunk, count_ - first);
    read(first, n, buf.data());
    fn(buf.data(), n, first);
  }
}

int64_t Shard::max_token() const {
  int64_t m = -1;
  scan([&](const int32_t* ids, int64_t n, int64_t) {
    for (int64_t i = 0; i < n; ++i) m = std::max<int64_t>(m, static_cast<uint32_t>(ids[i]));
  });
  return m;
}

void write_shard(const std::string& path, const int32_t* tokens, size_t count, TokenWidth width) {
  TRAINER_CHECK(count <= 0x7FFFFFFFu,
                fmt::format("shard '{}': {} tokens do not fit the int32 count", path, count));
  int32_t header[kShardHeaderInts] = {};
  header[0] = width == TokenWidth::u16 ? kShardMagicU16 : kShardMagicU32;
  header[1] = width == TokenWidth::u16 ? kShardVersionU16 : kShardVersionU32;
  header[2] = static_cast<int32_t>(count);
  std::string body(count * token_width_bytes(width), '\0');
  const int64_t limit = width == TokenWidth::u16 ? 65536 : INT64_C(1) << 32;
  for (size_t i = 0; i < count; ++i) {
    TRAINER_CHECK(tokens[i] >= 0 && tokens[i] < limit,
                  fmt::format("token {} does not fit shard '{}'", tokens[i], path));
    if (width == TokenWidth::u16) {
      const auto v = static_cast<uint16_t>(tokens[i]);
      std::memcpy(&body[i * 2], &v, 2);
    } else {
      const auto v = static_cast<uint32_t>(tokens[i]);
      std::memcpy(&body[i * 4], &v, 4);
    }
  }
  write_file_atomically(path, "token shard", [&](const AtomicWriteFn& write) {
    write(header, kShardHeaderBytes);
    write(body.data(), body.size());
  });
}

void write_shard(const std::string& path, const std::vector<int32_t>& tokens, TokenWidth width) {
  write_shard(path, tokens.data(), tokens.size(), width);
}

}  // namespace trainer
