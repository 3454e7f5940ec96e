// `trainer data prepare`: text files -> token shards for the loader.
//
// Inputs are files or glob patterns, read in the order given (each pattern's matches sorted by
// name). Each file is split into documents (documents.h); round(val_fraction x documents)
// of them (at least 1 and at most all but one when val_fraction > 0) are drawn for validation
// by a Fisher-Yates shuffle seeded from `seed`, the rest are training documents. Each document
// becomes [BOS] tokens [EOS] (gpt2 and byte: end-of-text then the tokens, llm.c's convention:
// every document, the first included, starts with end-of-text; a tokenizer.json: its
// tokenizer_config.json's BOS/EOS, or --bos/--eos), concatenated in input order per split.
// Documents are tokenized by `threads` threads in batches and written in input order, so the
// shards are byte-identical whatever the thread count.
//
// Output in out_dir, in llm.c's shard format (shard.h), uint16 unless the vocabulary needs
// uint32:
//   train_000000.bin, train_000001.bin, ...   (recipe: data.train: "<out_dir>/train_*.bin")
//   val_000000.bin, ...                       (recipe: data.val:   "<out_dir>/val_*.bin")
// Shards hold shard_tokens tokens, except at the end of a split: what remains goes into one
// shard or, if that would exceed shard_tokens, into two equal halves, so that no shard holds
// fewer than shard_tokens / 2 tokens (unless the whole split does) and a loader with a long
// seq_len never meets a tiny last shard.
// Shards are written into out_dir/.staging and moved into place at the end, replacing every
// train_NNNNNN.bin / val_NNNNNN.bin from an earlier run, so a failed run leaves the old set.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace trainer {

struct PrepareOptions {
  std::vector<std::string> inputs;  // files or glob patterns
  std::string tokenizer = "gpt2";  // gpt2, byte, or a tokenizer.json (tokenizer.h)
  std::string tokenizer_dir = kDefaultTokenizerDir;
  std::string bos = "auto", eos = "auto";  // per-document marks (tokenizer_config.h)
  int threads = 0;  // tokenizing threads; 0 = every core. The output does not depend on it.
  std::string out_dir;
  double val_fraction = 0.05;  // in [0, 1)
  int64_t shard_tokens = 100'000'000;
  uint64_t seed = 1337;
  int doc_blank_lines = 3;  // document separator: this many blank lines; 0 = one per file
};

struct PrepareSummary {
  int64_t files = 0;
  int64_t input_bytes = 0;
  int64_t train_documents = 0;
  int64_t val_documents = 0;
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  std::vector<std::string> train_shards;  // paths written
  std::vector<std::string> val_shards;
  int64_t stale_shards_removed = 0;  // shards of an earlier run that were not overwritten
  int32_t vocab_size = 0;
  int32_t bos = -1, eos = -1;  // the ids used (-1 = none)
  std::string bos_text, eos_text;  // their decoded text
  int threads = 1;
};

// Called after each document with the input bytes tokenized so far and the total.
using PrepareProgress = std::function<void(int64_t done_bytes, int64_t total_bytes)>;

// Option errors are ConfigErrors; unreadable or empty inputs and unwritable outputs are
// InputErrors naming the file.
PrepareSummary prepare_shards(const PrepareOptions& options, const PrepareProgress& progress);

}  // namespace trainer
