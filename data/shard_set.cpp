// ShardSet (see shard_set.h): sample g of an epoch is found by a binary search over the
// shards' cumulative sample counts in the epoch's shard order; the permutations of the two
// shards used last are cached, so reading along the order touches each shard's once per epoch.
#include "data/shard_set.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "data/file_glob.h"
#include "data/folder_publication.h"
#include "data/shuffle.h"
#include "data/token_shard.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

enum Stream : uint64_t { kShardOrderStream = 1, kSampleOrderStream = 2 };

}  // namespace

struct ShardSet::Shards {
  std::vector<Shard> open;
};

ShardSet::ShardSet(const std::string& patterns, int seq_len, int vocab_size, uint64_t seed, Shuffle shuffle)
    : patterns_(patterns), seq_len_(seq_len), seed_(seed), shuffle_(shuffle), shards_(std::make_unique<Shards>()) {
  files_ = expand_glob_list(patterns);
  const int64_t T = seq_len;
  for (const std::string& f : files_) {
    check_folder_published(std::filesystem::path(f).parent_path().string(), "token shard '" + f + "'");
    shards_->open.emplace_back(f, vocab_size);
    const int64_t n = shards_->open.back().tokens();
    if (n < T + 1)
      throw InputError(fmt::format("token shard '{}' holds {} tokens, fewer than one sample of "
                                   "seq_len + 1 = {} tokens", f, n, T + 1));
    shard_samples_.push_back((n - 1) / T);
    total_samples_ += shard_samples_.back();
    total_tokens_ += n;
  }
}

ShardSet::~ShardSet() = default;
ShardSet::ShardSet(ShardSet&&) noexcept = default;
ShardSet& ShardSet::operator=(ShardSet&&) noexcept = default;

void ShardSet::build_order(int64_t e) {
  if (order_epoch_ == e) return;
  for (const Shard& s : shards_->open) s.check_unchanged();
  const int32_t n = static_cast<int32_t>(shards_->open.size());
  shard_order_.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) shard_order_[i] = i;
  if (shuffle_ == Shuffle::on) {
    SplitMix64 rng(stream_seed(seed_, static_cast<uint64_t>(e), kShardOrderStream));
    fisher_yates(&shard_order_, &rng);
  }
  order_start_.assign(1, 0);
  for (int32_t s : shard_order_) order_start_.push_back(order_start_.back() + shard_samples_[s]);
  for (Permutation& p : perms_) p.shard = -1;
  order_epoch_ = e;
}

const std::vector<uint32_t>& ShardSet::permutation(int32_t shard) {
  if (perms_[0].shard == shard) return perms_[0].order;
  std::swap(perms_[0], perms_[1]);
  if (perms_[0].shard == shard) return perms_[0].order;
  Permutation& p = perms_[0];
  p.shard = shard;
  p.order.resize(static_cast<size_t>(shard_samples_[shard]));
  for (size_t i = 0; i < p.order.size(); ++i) p.order[i] = static_cast<uint32_t>(i);
  if (shuffle_ == Shuffle::on) {
    SplitMix64 rng(stream_seed(seed_, static_cast<uint64_t>(order_epoch_), kSampleOrderStream,
                               static_cast<uint64_t>(shard)));
    fisher_yates(&p.order, &rng);
  }
  return p.order;
}

void ShardSet::read(int64_t epoch, int64_t g, int32_t* out) {
  build_order(epoch);
  const auto it = std::upper_bound(order_start_.begin(), order_start_.end(), g);
  const size_t k = static_cast<size_t>(it - order_start_.begin()) - 1;
  const int32_t shard = shard_order_[k];
  const int64_t local = g - order_start_[k];
  const int64_t sample = permutation(shard)[static_cast<size_t>(local)];
  shards_->open[static_cast<size_t>(shard)].read(sample * seq_len_, seq_len_ + 1, out);
}

}  // namespace trainer
