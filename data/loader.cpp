// DataLoader (see loader.h): the epoch's global order of samples is shard order (shuffled from
// (seed, epoch)) and, within each shard, sample order (shuffled from (seed, epoch, shard)).
// Global sample g of the epoch is found by a binary search over the shards' cumulative sample
// counts in the epoch's shard order; the permutations of the shards in use are cached.
#include "data/loader.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "data/file_glob.h"
#include "data/shuffle.h"
#include "data/token_shard.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

enum Stream : uint64_t { kShardOrderStream = 1, kSampleOrderStream = 2 };

void check_options(const LoaderOptions& o) {
  auto positive = [&](const char* name, int64_t v) {
    if (v <= 0)
      throw ConfigError(fmt::format("data loader for '{}': {} must be positive, got {}",
                                    o.pattern, name, v));
  };
  positive("seq_len", o.seq_len);
  positive("micro_batch", o.micro_batch);
  positive("grad_accum", o.grad_accum);
  positive("dp_size", o.dp_size);
  positive("vocab_size", o.vocab_size);
  if (o.dp_rank < 0 || o.dp_rank >= o.dp_size)
    throw ConfigError(fmt::format("data loader for '{}': dp_rank {} outside [0, {})", o.pattern,
                                  o.dp_rank, o.dp_size));
}

}  // namespace

struct DataLoader::Impl {
  struct Permutation {
    int32_t shard = -1;
    std::vector<uint32_t> order;  // local sample index -> sample index in the shard
  };

  LoaderOptions opt;
  std::vector<std::string> files;
  std::vector<Shard> shards;
  std::vector<int64_t> shard_samples;  // per shard, in file order
  int64_t total_samples = 0;
  int64_t total_tokens = 0;
  int64_t global_batch = 0;

  int64_t epoch = 0;
  int64_t position = 0;  // global samples consumed this epoch, at the start of the step
  int micro = 0;         // micro-batches of the current step already returned

  int64_t order_epoch = -1;
  std::vector<int32_t> shard_order;   // the epoch's shard order
  std::vector<int64_t> order_start;   // cumulative samples along shard_order, size + 1
  std::array<Permutation, 2> perms;   // most recently used first
  std::vector<int32_t> sample_buf;    // T + 1 tokens

  void open(const LoaderOptions& o) {
    check_options(o);
    opt = o;
    files = expand_glob_list(o.pattern);
    const int64_t T = o.seq_len;
    for (const std::string& f : files) {
      shards.emplace_back(f, o.vocab_size);
      const int64_t n = shards.back().tokens();
      if (n < T + 1)
        throw InputError(fmt::format("token shard '{}' holds {} tokens, fewer than one sample of "
                                     "seq_len + 1 = {} tokens", f, n, T + 1));
      shard_samples.push_back((n - 1) / T);
      total_samples += shard_samples.back();
      total_tokens += n;
    }
    global_batch = int64_t{o.micro_batch} * o.grad_accum * o.dp_size;
    if (total_samples < global_batch)
      throw InputError(fmt::format(
          "token shards '{}' ({} files, {} tokens) give {} samples of seq_len + 1 = {} tokens, "
          "fewer than one global batch of {} (micro_batch {} x grad_accum {} x data ranks {})",
          o.pattern, files.size(), total_tokens, total_samples, T + 1, global_batch,
          o.micro_batch, o.grad_accum, o.dp_size));
    sample_buf.resize(static_cast<size_t>(T + 1));
  }

  void build_order(int64_t e) {
    if (order_epoch == e) return;
    for (const Shard& s : shards) s.check_unchanged();
    const int32_t n = static_cast<int32_t>(shards.size());
    shard_order.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) shard_order[i] = i;
    if (opt.shuffle == Shuffle::on) {
      SplitMix64 rng(stream_seed(opt.seed, static_cast<uint64_t>(e), kShardOrderStream));
      fisher_yates(&shard_order, &rng);
    }
    order_start.assign(1, 0);
    for (int32_t s : shard_order) order_start.push_back(order_start.back() + shard_samples[s]);
    for (Permutation& p : perms) p.shard = -1;
    order_epoch = e;
  }

  const std::vector<uint32_t>& permutation(int32_t shard) {
    if (perms[0].shard == shard) return perms[0].order;
    std::swap(perms[0], perms[1]);
    if (perms[0].shard == shard) return perms[0].order;
    Permutation& p = perms[0];
    p.shard = shard;
    p.order.resize(static_cast<size_t>(shard_samples[shard]));
    for (size_t i = 0; i < p.order.size(); ++i) p.order[i] = static_cast<uint32_t>(i);
    if (opt.shuffle == Shuffle::on) {
      SplitMix64 rng(stream_seed(opt.seed, static_cast<uint64_t>(order_epoch), kSampleOrderStream,
                                 static_cast<uint64_t>(shard)));
      fisher_yates(&p.order, &rng);
    }
    return p.order;
  }

  // Reads global sample g of the current epoch's order: T + 1 tokens into sample_buf.
  void read_sample(int64_t g) {
    const auto it = std::upper_bound(order_start.begin(), order_start.end(), g);
    const size_t k = static_cast<size_t>(it - order_start.begin()) - 1;
    const int32_t shard = shard_order[k];
    const int64_t local = g - order_start[k];
    const int64_t sample = permutation(shard)[static_cast<size_t>(local)];
    shards[shard].read(sample * opt.seq_len, opt.seq_len + 1, sample_buf.data());
  }

  void next(int32_t* inputs, int32_t* targets) {
    if (micro == 0 && position + global_batch > total_samples) {
      ++epoch;
      position = 0;
    }
    build_order(epoch);
    const int64_t B = opt.micro_batch, T = opt.seq_len;
    const int64_t first = position + (int64_t{opt.dp_rank} * opt.grad_accum + micro) * B;
    for (int64_t b = 0; b < B; ++b) {
      read_sample(first + b);
      std::copy(sample_buf.begin(), sample_buf.begin() + T, inputs + b * T);
      std::copy(sample_buf.begin() + 1, sample_buf.end(), targets + b * T);
    }
    if (++micro == opt.grad_accum) {
      micro = 0;
      position += global_batch;
    }
  }
};

DataLoader::DataLoader(const LoaderOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->open(options);
}

DataLoader::~DataLoader() = default;
DataLoader::DataLoader(DataLoader&&) noexcept = default;
DataLoader& DataLoader::operator=(DataLoader&&) noexcept = default;

void DataLoader::next(int32_t* inputs, int32_t* targets) { impl_->next(inputs, targets); }

LoaderState DataLoader::state() const {
  TRAINER_CHECK(impl_->micro == 0,
                fmt::format("loader state taken inside a step ({} of {} micro-batches done)",
                            impl_->micro, impl_->opt.grad_accum));
  return {impl_->epoch, impl_->position};
}

void DataLoader::restore(const LoaderState& state) {
  if (state.epoch < 0 || state.position < 0 || state.position > impl_->total_samples)
    throw InputError(fmt::format(
        "data loader state (epoch {}, position {}) does not fit the shards '{}', which give {} "
        "samples per epoch (were the shards or seq_len changed since the checkpoint?)",
        state.epoch, state.position, impl_->opt.pattern, impl_->total_samples));
  impl_->epoch = state.epoch;
  impl_->position = state.position;
  impl_->micro = 0;
}

void DataLoader::reset() { restore(LoaderState{}); }

int64_t DataLoader::samples_per_epoch() const { return impl_->total_samples; }
int64_t DataLoader::total_tokens() const { return impl_->total_tokens; }
const std::vector<std::string>& DataLoader::files() const { return impl_->files; }

}  // namespace trainer
