// DataLoader: training samples from token shards (llm.c format, read in place), distributed
// over data-parallel ranks.
//
// Invariants:
// - A sample is T+1 consecutive tokens (inputs are the first T, targets the last T) taken at
//   a multiple of T within one shard.
// - Per epoch there is one global order of samples, fixed by (seed, epoch) alone: shard order
//   and sample order within shards are shuffled (or kept in file order with
//   Shuffle::off). The order does not depend on the number of data ranks.
// - An optimizer step consumes global_batch = micro_batch * grad_accum * dp_size consecutive
//   samples of that order; data rank d's micro-batch m of the step holds samples
//   [pos + (d * grad_accum + m) * B, +B). So the step's global batch is the same for every
//   data-parallel layout, and no sample appears twice within a step.
// - state() taken between steps and restore()d later, with any dp_size, continues at the same
//   global position. An epoch ends when fewer than global_batch samples remain; the next one
//   starts with a new order.
// - Shuffling uses SplitMix64 with hand-written Fisher-Yates and bounded draws (shuffle.h),
//   so the order is the same on every platform and standard library.
// - Opening checks every shard (shard.h: magic, version, size, every token < vocab_size) and
//   fails with an InputError naming the file for those, for a missing file or empty glob, for a
//   shard with fewer than T+1 tokens (no sample) and for data with fewer samples than one
//   global batch. Shards stay open and are read sample by sample (pread), never copied whole;
//   a shard that shrinks or grows during the run (checked at each epoch, and on every short
//   read) is an InputError naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainer {

enum class Shuffle : uint8_t { off, on };

struct LoaderOptions {
  std::string pattern;      // glob (or several separated by commas) of shard files
  int seq_len = 0;          // T
  int micro_batch = 0;      // B
  int grad_accum = 1;       // micro-batches per step per data rank
  int dp_rank = 0;
  int dp_size = 1;
  uint64_t seed = 0;
  int vocab_size = 0;       // every token must be < vocab_size
  Shuffle shuffle = Shuffle::on;
};

struct LoaderState {
  int64_t epoch = 0;
  int64_t position = 0;  // global samples consumed in this epoch
};

class DataLoader {
 public:
  // Opens and checks every shard; bad input throws InputError naming the file.
  explicit DataLoader(const LoaderOptions& options);
  ~DataLoader();
  DataLoader(DataLoader&&) noexcept;
  DataLoader& operator=(DataLoader&&) noexcept;

  // This rank's next micro-batch: inputs and targets, each (B, T) int32. After grad_accum
  // calls the loader has advanced by one global step.
  void next(int32_t* inputs, int32_t* targets);
  LoaderState state() const;
  void restore(const LoaderState& state);
  // Back to the start of epoch 0 (evaluation reads the validation data from its start).
  void reset();
  // All samples of the shards (an epoch uses the largest multiple of global_batch of them).
  int64_t samples_per_epoch() const;
  int64_t total_tokens() const;
  const std::vector<std::string>& files() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainer
