// Cutting a split's token stream into shards, tracking the resume point (see shard_sink.h).
#include "data/shard_sink.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

namespace trainer {

ShardSink::ShardSink(std::string dir, std::string prefix, int64_t shard_tokens, TokenWidth width,
                     std::function<void()> on_shard)
    : dir_(std::move(dir)), prefix_(std::move(prefix)), shard_tokens_(shard_tokens), width_(width),
      on_shard_(std::move(on_shard)) {}

void ShardSink::restore(const SinkPoint& point) {
  point_ = point;
  next_doc_ = point.resume_doc;
}

void ShardSink::add(int64_t doc, int32_t bos, const std::vector<int32_t>& tokens, int32_t eos) {
  const size_t before = buf_.size();
  if (bos >= 0) buf_.push_back(bos);
  buf_.insert(buf_.end(), tokens.begin(), tokens.end());
  if (eos >= 0) buf_.push_back(eos);
  int64_t written = 0;
  if (doc == point_.resume_doc && point_.resume_skip > 0) {  // written before a restart
    const size_t skip = std::min(static_cast<size_t>(point_.resume_skip), buf_.size() - before);
    buf_.erase(buf_.begin() + static_cast<std::ptrdiff_t>(before),
               buf_.begin() + static_cast<std::ptrdiff_t>(before + skip));
    written = static_cast<int64_t>(skip);
  }
  docs_.push_back({doc, static_cast<int64_t>(buf_.size() - before), written});
  next_doc_ = doc + 1;
  const size_t s = static_cast<size_t>(shard_tokens_);
  while (buf_.size() >= s + s / 2) write(s);
}

void ShardSink::finish() {
  const size_t r = buf_.size();
  if (r > static_cast<size_t>(shard_tokens_)) {
    const size_t first = r - r / 2;
    write(first);
    write(buf_.size());
  } else if (r > 0) {
    write(r);
  }
}

void ShardSink::write(size_t n) {
  std::string name = fmt::format("{}_{:06d}.bin", prefix_, point_.names.size());
  write_shard((std::filesystem::path(dir_) / name).string(), buf_.data(), n, width_);
  buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n));
  point_.names.push_back(std::move(name));
  point_.tokens += static_cast<int64_t>(n);
  // The resume point moves past the documents whose tokens are now all in shards.
  int64_t left = static_cast<int64_t>(n);
  while (!docs_.empty() && left >= docs_.front().in_buf) {
    left -= docs_.front().in_buf;
    docs_.pop_front();
  }
  if (docs_.empty()) {
    point_.resume_doc = next_doc_;
    point_.resume_skip = 0;
  } else {
    Pending& front = docs_.front();
    front.in_buf -= left;
    front.written += left;
    point_.resume_doc = front.doc;
    point_.resume_skip = front.written;
  }
  if (on_shard_) on_shard_();
}

}  // namespace trainer
