// One split's token stream of `data prepare`, cut into shards (sizes: prepare.h), with what a
// resumed run needs: after every shard, the first document not wholly written (its index
// among all documents of the run) and how many of its tokens are already in shards. A sink
// restored from that point skips the documents before it and that many tokens of it, so the
// resumed run writes exactly the shards an uninterrupted one would.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "data/token_shard.h"

namespace trainer {

struct SinkPoint {
  std::vector<std::string> names;  // shards written, in order
  int64_t tokens = 0;              // in them
  int64_t resume_doc = 0;          // first document (run-wide index) not wholly written
  int64_t resume_skip = 0;         // tokens of it already written
};

class ShardSink {
 public:
  // on_shard runs after each shard is written (the prepare state is saved there).
  ShardSink(std::string dir, std::string prefix, int64_t shard_tokens, TokenWidth width,
            std::function<void()> on_shard);

  void restore(const SinkPoint& point);
  // Whether document `doc` still has tokens to write (false: skip it without tokenizing).
  bool wants(int64_t doc) const { return doc >= point_.resume_doc; }
  // Adds document `doc`: [bos] tokens [eos], less what a restored point says is written.
  void add(int64_t doc, int32_t bos, const std::vector<int32_t>& tokens, int32_t eos);
  void finish();

  int64_t total() const { return point_.tokens + static_cast<int64_t>(buf_.size()); }
  const SinkPoint& point() const { return point_; }
  const std::vector<std::string>& names() const { return point_.names; }

 private:
  void write(size_t n);
  std::string dir_, prefix_;
  int64_t shard_tokens_;
  TokenWidth width_;
  std::function<void()> on_shard_;
  std::vector<int32_t> buf_;
  struct Pending {
    int64_t doc, in_buf, written;  // a document with tokens in buf_: how many, how many before
  };
  std::deque<Pending> docs_;  // in order
  int64_t next_doc_ = 0;  // one past the last document added
  SinkPoint point_;
};

}  // namespace trainer
