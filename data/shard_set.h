// ShardSet: the token shards of one glob list (one data source), checked and read in place,
// with a per-epoch global order of their samples.
//
// Invariants:
// - A sample is T+1 consecutive tokens taken at a multiple of T within one shard; a shard of
//   n tokens gives (n - 1) / T samples.
// - Epoch e's order is fixed by (seed, e) alone: shard order shuffled from (seed, e), sample
//   order within each shard from (seed, e, shard index), or file order with Shuffle::off.
// - Opening checks every shard (token_shard.h: magic, version, size, every token <
//   vocab_size); a missing file, an empty glob or a shard with fewer than T+1 tokens is an
//   InputError naming it. A shard that changes size during the run (checked when an epoch's
//   order is built, and on every short read) is an InputError naming it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainer {

enum class Shuffle : uint8_t { off, on };

class ShardSet {
 public:
  ShardSet(const std::string& patterns, int seq_len, int vocab_size, uint64_t seed, Shuffle shuffle);
  ~ShardSet();
  ShardSet(ShardSet&&) noexcept;
  ShardSet& operator=(ShardSet&&) noexcept;

  // Sample g (0 <= g < samples()) of epoch e's order: T + 1 tokens into out.
  void read(int64_t epoch, int64_t g, int32_t* out);
  int64_t samples() const { return total_samples_; }
  int64_t tokens() const { return total_tokens_; }
  const std::vector<std::string>& files() const { return files_; }
  const std::string& patterns() const { return patterns_; }

 private:
  struct Permutation {
    int32_t shard = -1;
    std::vector<uint32_t> order;  // local sample index -> sample index in the shard
  };
  void build_order(int64_t epoch);
  const std::vector<uint32_t>& permutation(int32_t shard);

  std::string patterns_;
  int seq_len_;
  uint64_t seed_;
  Shuffle shuffle_;
  std::vector<std::string> files_;
  struct Shards;  // the open token_shard.h Shards, in file order
  std::unique_ptr<Shards> shards_;
  std::vector<int64_t> shard_samples_;  // per shard, in file order
  int64_t total_samples_ = 0;
  int64_t total_tokens_ = 0;

  int64_t order_epoch_ = -1;
  std::vector<int32_t> shard_order_;  // the epoch's shard order
  std::vector<int64_t> order_start_;  // cumulative samples along shard_order_, size + 1
  std::array<Permutation, 2> perms_;  // most recently used first
};

}  // namespace trainer
