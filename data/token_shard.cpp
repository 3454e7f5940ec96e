// llm.c token shards: checked opening and atomic writing (see token_shard.h).
#include "data/token_shard.h"

#include <fmt/core.h>

#include <cstring>

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

template <class T>
int64_t max_of(const T* p, int64_t n) {
  T m = 0;
  for (int64_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
  return n == 0 ? -1 : static_cast<int64_t>(m);
}

template <class T>
int64_t first_at_least(const T* p, int64_t n, int64_t limit) {
  for (int64_t i = 0; i < n; ++i)
    if (static_cast<int64_t>(p[i]) >= limit) return i;
  return -1;
}

}  // namespace

ShardLayout check_shard_bytes(std::string_view bytes, const std::string& path, int64_t vocab_size) {
  const size_t size = bytes.size();
  if (size < kShardHeaderBytes)
    throw InputError(fmt::format(
        "token shard '{}' has {} bytes, less than the 1024-byte header of llm.c's format", path,
        size));
  int32_t header[kShardHeaderInts];
  std::memcpy(header, bytes.data(), kShardHeaderBytes);
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
  const size_t width = token_width_bytes(layout.width);
  const size_t expected = kShardHeaderBytes + width * static_cast<size_t>(count);
  if (size != expected)
    throw InputError(fmt::format("token shard '{}' has {} bytes, but its header says {} tokens "
                                 "of {} bytes, which is {} bytes (truncated or wrong file?)",
                                 path, size, count, width, expected));
  if (vocab_size > 0) {
    const char* body = bytes.data() + kShardHeaderBytes;
    const int64_t bad =
        layout.width == TokenWidth::u16
            ? first_at_least(reinterpret_cast<const uint16_t*>(body), count, vocab_size)
            : first_at_least(reinterpret_cast<const uint32_t*>(body), count, vocab_size);
    if (bad >= 0) {
      uint32_t token = 0;
      std::memcpy(&token, body + width * static_cast<size_t>(bad), width);
      throw InputError(fmt::format("token shard '{}': token {} at position {} is not below the "
                                   "vocabulary size {} (shards made with another tokenizer?)",
                                   path, static_cast<int32_t>(token), bad, vocab_size));
    }
  }
  return layout;
}

Shard::Shard(const std::string& path, int64_t vocab_size) : file_(path) {
  const ShardLayout layout = check_shard_bytes(file_.view(), path, vocab_size);
  count_ = layout.tokens;
  width_ = layout.width;
}

int32_t Shard::token(int64_t i) const {
  const char* body = file_.data() + kShardHeaderBytes;
  return width_ == TokenWidth::u16
             ? static_cast<int32_t>(reinterpret_cast<const uint16_t*>(body)[i])
             : static_cast<int32_t>(reinterpret_cast<const uint32_t*>(body)[i]);
}

void Shard::read(int64_t first, int64_t n, int32_t* out) const {
  TRAINER_CHECK(first >= 0 && n >= 0 && first + n <= count_,
                fmt::format("read of [{}, {}) outside shard '{}' of {} tokens", first, first + n,
                            path(), count_));
  const char* body = file_.data() + kShardHeaderBytes;
  if (width_ == TokenWidth::u16) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(body) + first;
    for (int64_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(body) + first;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(p[i]);
  }
}

int64_t Shard::max_token() const {
  const char* body = file_.data() + kShardHeaderBytes;
  return width_ == TokenWidth::u16 ? max_of(reinterpret_cast<const uint16_t*>(body), count_)
                                   : max_of(reinterpret_cast<const uint32_t*>(body), count_);
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
