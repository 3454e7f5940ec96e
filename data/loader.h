// DataLoader: training samples from token shards (llm.c format, read in place), distributed
// over data-parallel ranks, from one source or a weighted blend of several.
//
// Invariants:
// - A sample is T+1 consecutive tokens (inputs are the first T, targets the last T); see
//   shard_set.h for how each source orders its samples per epoch from (seed, epoch).
// - An optimizer step consumes global_batch = micro_batch * grad_accum * dp_size consecutive
//   samples of the run's sample stream; data rank d's micro-batch m of the step holds samples
//   [pos + (d * grad_accum + m) * B, +B). So the step's global batch is the same for every
//   data-parallel layout, and no sample appears twice within a step.
// - One source (a single glob): the stream is the epoch's order; an epoch ends when fewer than
//   global_batch samples remain, and the next one starts with a new order.
// - A blend: the source of the stream's sample s is drawn from (seed, s) with probability
//   proportional to the weights of the mix in force at the step (blend_mix.h); each source
//   keeps its own epoch and position in its own order (seeded by (seed, source index)) and
//   rolls over to its next epoch, sample by sample, when it runs out. Stages switch the mix at
//   step boundaries (set_step says which step the next micro-batches are for).
// - state() taken between steps and restore()d later, with any dp_size, continues at the same
//   global position (for a blend: every source's too).
// - Opening checks every shard (shard_set.h) and fails with an InputError naming the file; a
//   single source with fewer samples than one global batch is an InputError too.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/blend_source.h"
#include "data/shard_set.h"

namespace trainer {

struct LoaderOptions {
  std::vector<BlendSource> sources;  // one = a plain glob list; several = a blend
  std::vector<BlendStage> stages;    // mixes by step; empty = `sources` for the whole run
  int seq_len = 0;          // T
  int micro_batch = 0;      // B
  int grad_accum = 1;       // micro-batches per step per data rank
  int dp_rank = 0;
  int dp_size = 1;
  uint64_t seed = 0;
  int vocab_size = 0;       // every token must be < vocab_size
  Shuffle shuffle = Shuffle::on;
};

struct SourceState {
  std::string path;      // the source's glob, to check it against the recipe on restore
  int64_t epoch = 0;
  int64_t position = 0;  // samples of this source consumed in its epoch
};

struct LoaderState {
  int64_t epoch = 0;     // single source: the epoch; a blend: 0
  int64_t position = 0;  // single source: samples consumed this epoch; a blend: in the run
  std::vector<SourceState> sources;  // a blend: every source's state; single source: empty
};

class DataLoader {
 public:
  // Opens and checks every shard; bad input throws InputError naming the file, bad options
  // ConfigError.
  explicit DataLoader(const LoaderOptions& options);
  ~DataLoader();
  DataLoader(DataLoader&&) noexcept;
  DataLoader& operator=(DataLoader&&) noexcept;

  // The 1-based optimizer step the next micro-batches are for (it picks a blend's stage).
  void set_step(int64_t step);
  // This rank's next micro-batch: inputs and targets, each (B, T) int32. After grad_accum
  // calls the loader has advanced by one global step.
  void next(int32_t* inputs, int32_t* targets);
  LoaderState state() const;
  void restore(const LoaderState& state);
  // Back to the start (evaluation reads the validation data from its start).
  void reset();
  // All samples of the shards (one source: an epoch uses the largest multiple of global_batch).
  int64_t samples_per_epoch() const;
  int64_t total_tokens() const;
  const std::vector<std::string>& files() const;

  // A blend's stage at 1-based `step` (0 without stages; stages.size() after the last one)
  // and the mix it draws from as "name weight, ..." (weights normalised to sum to 1).
  int stage_at(int64_t step) const;
  std::string mix_text(int stage) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainer
