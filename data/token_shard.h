// Token shards in llm.c's format (all little-endian):
//   header: 256 x int32 (1024 bytes): [0] magic, [1] version, [2] token count, rest 0
//   body:   token count ids, uint16 (magic 20240520, version 1: GPT-2 and other vocabularies
//           of at most 65,536 ids) or uint32 (magic 20240801, version 7: larger vocabularies)
//   file size == 1024 + bytes_per_token * token count, exactly.
// This is what llm.c's data_common.write_datafile writes, so its shards load unchanged.
//
// Shards are read with pread(2), not memory-mapped: a shard truncated or rewritten in place
// while a run reads it (an operator re-running `data prepare` into the same folder, a full
// disk's cleanup) would kill a mapped reader with SIGBUS. A short read, and a size that
// differs from the one checked at opening (check_unchanged(), called at each epoch), is an
// InputError naming the shard. Replacing a shard by rename is harmless: the open descriptor
// keeps reading the file that was checked.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/base/regular_file.h"

namespace trainer {

enum class TokenWidth : uint8_t { u16, u32 };

constexpr int32_t kShardMagicU16 = 20240520;
constexpr int32_t kShardVersionU16 = 1;
constexpr int32_t kShardMagicU32 = 20240801;
constexpr int32_t kShardVersionU32 = 7;
constexpr int kShardHeaderInts = 256;
constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);

inline size_t token_width_bytes(TokenWidth w) { return w == TokenWidth::u16 ? 2 : 4; }
// The narrowest width that holds every id below vocab_size.
TokenWidth token_width_for_vocab(int64_t vocab_size);

// What a checked shard header says about the body that follows it.
struct ShardLayout {
  TokenWidth width = TokenWidth::u16;
  int64_t tokens = 0;
};

// The header checks Shard's constructor makes: magic, version, and the file's size against the
// header's count. header_bytes holds the first 1024 bytes (read only when file_bytes reaches
// that). Throws InputError naming the file, the value found and what was expected.
ShardLayout check_shard_header(const char* header_bytes, int64_t file_bytes, const std::string& path);
// Every id in ids[0, n) (tokens [first, first + n) of the shard) below vocab_size, or an
// InputError naming the file, the token and its position.
void check_token_ids(const int32_t* ids, int64_t n, int64_t first, int64_t vocab_size, const std::string& path);
// Both, on a whole shard file's bytes in memory (`path` names it in messages); the fuzzers'
// entry point.
ShardLayout check_shard_bytes(std::string_view bytes, const std::string& path, int64_t vocab_size);

// A shard opened read-only; the header has been checked.
class Shard {
 public:
  // check_shard_header, then check_token_ids over the whole body when vocab_size > 0 (one
  // pass over the file).
  Shard(const std::string& path, int64_t vocab_size);

  const std::string& path() const { return path_; }
  int64_t tokens() const { return count_; }
  TokenWidth width() const { return width_; }
  int32_t token(int64_t i) const;
  // Copies n tokens starting at first into out, widened to int32. A shard that has become
  // shorter than its header says is an InputError naming it.
  void read(int64_t first, int64_t n, int32_t* out) const;
  // Calls fn(ids, n, first) with consecutive chunks of the whole shard, widened to int32:
  // ids[0, n) are tokens [first, first + n).
  void scan(const std::function<void(const int32_t* ids, int64_t n, int64_t first)>& fn) const;
  // Largest id in the shard (-1 when empty).
  int64_t max_token() const;
  // Throws InputError naming the shard when its size is no longer the one checked at opening.
  void check_unchanged() const;

 private:
  // Reads the file's bytes [offset, offset + bytes) into out, or throws the changed-shard error.
  void read_at(int64_t offset, size_t bytes, void* out) const;

  std::string path_;
  RegularFile file_;
  int64_t count_ = 0;
  TokenWidth width_ = TokenWidth::u16;
};

// Writes tokens as a shard (atomically: temp file + rename). Every id must fit the width;
// a token that does not is a std::logic_error (the caller chose the width).
void write_shard(const std::string& path, const std::vector<int32_t>& tokens, TokenWidth width);
void write_shard(const std::string& path, const int32_t* tokens, size_t count, TokenWidth width);

}  // namespace trainer
