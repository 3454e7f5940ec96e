// Token shards in llm.c's format (all little-endian):
//   header: 256 x int32 (1024 bytes): [0] magic, [1] version, [2] token count, rest 0
//   body:   token count ids, uint16 (magic 20240520, version 1: GPT-2 and other vocabularies
//           of at most 65,536 ids) or uint32 (magic 20240801, version 7: larger vocabularies)
//   file size == 1024 + bytes_per_token * token count, exactly.
// This is what llm.c's data_common.write_datafile writes, so its shards load unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/file_io.h"

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

// The checks Shard's constructor makes, on the file's bytes in memory (`path` names it in
// messages): magic, version, size against the header's count and, when vocab_size > 0, every
// token below vocab_size. Throws InputError naming the file, the value found and what was
// expected.
ShardLayout check_shard_bytes(std::string_view bytes, const std::string& path, int64_t vocab_size);

// A shard opened read-only and memory-mapped; the header has been checked.
class Shard {
 public:
  // check_shard_bytes on the mapped file (one pass over it when vocab_size > 0).
  Shard(const std::string& path, int64_t vocab_size);

  const std::string& path() const { return file_.path(); }
  int64_t tokens() const { return count_; }
  TokenWidth width() const { return width_; }
  int32_t token(int64_t i) const;
  // Copies n tokens starting at first into out, widened to int32.
  void read(int64_t first, int64_t n, int32_t* out) const;
  // Largest id in the shard (-1 when empty).
  int64_t max_token() const;

 private:
  MappedFile file_;
  int64_t count_ = 0;
  TokenWidth width_ = TokenWidth::u16;
};

// Writes tokens as a shard (atomically: temp file + rename). Every id must fit the width;
// a token that does not is a std::logic_error (the caller chose the width).
void write_shard(const std::string& path, const std::vector<int32_t>& tokens, TokenWidth width);
void write_shard(const std::string& path, const int32_t* tokens, size_t count, TokenWidth width);

}  // namespace trainer
