// `trainer data prepare`: text and JSONL files (plain, .gz, .zst) -> token shards.
//
// Inputs are files, glob patterns or directories (input_documents.h), read in the order given.
// Two streaming passes: the first reads every document (checking every JSONL line) and counts
// them; then round(val_fraction x documents) of them (at least 1 and at most all but one when
// val_fraction > 0) are drawn for validation by selection sampling (Knuth's algorithm S)
// seeded from `seed`: exactly that many, each set equally likely, with O(1) memory. The second
// pass tokenizes. Each document becomes [BOS] tokens [EOS] (gpt2 and byte: end-of-text then the
// tokens, llm.c's convention; a tokenizer.json: its tokenizer_config.json's BOS/EOS, or
// --bos/--eos), concatenated in input order per split. Documents are tokenized by `threads`
// threads in batches of about batch_bytes of text and written in input order, so the shards are
// byte-identical whatever the thread count. Memory: one batch plus at most 1.5 shards per split.
//
// Output in out_dir, in llm.c's shard format (token_shard.h), uint16 unless the vocabulary needs
// uint32:
//   train_000000.bin, train_000001.bin, ...   (recipe: data.train: "<out_dir>/train_*.bin")
//   val_000000.bin, ...                       (recipe: data.val:   "<out_dir>/val_*.bin")
//   tokenizer.record                          (which tokenizer made them: tokenizer_record.h)
// Shards hold shard_tokens tokens, except at the end of a split: what remains goes into one
// shard or, if that would exceed shard_tokens, into two equal halves, so that no shard holds
// fewer than shard_tokens / 2 tokens (unless the whole split does) and a loader with a long
// seq_len never meets a tiny last shard.
// Shards are written into out_dir/.staging and moved into place at the end, replacing every
// train_NNNNNN.bin / val_NNNNNN.bin from an earlier run, so a failed run leaves the old set.
// The run holds out_dir/.lock (dir_lock.h) from before it touches .staging to its end, so a
// second prepare into the same folder stops with exit 2 naming the first; publication is
// marked (folder_publication.h), so a reader never trains on a half-published mix.
// Resuming: after each staged shard a record (prepare_state.h) says how far the run got; a
// failed run that finished a shard keeps .staging, and a rerun with the same options and
// inputs keeps those shards and tokenizes only from the first document they do not hold.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/input_documents.h"
#include "data/tokenizer.h"

namespace trainer {

struct PrepareOptions {
  std::vector<std::string> inputs;  // files, glob patterns or directories
  std::string tokenizer = "gpt2";  // gpt2, byte, or a tokenizer.json (tokenizer.h)
  std::string tokenizer_dir = kDefaultTokenizerDir;
  std::string bos = "auto", eos = "auto";  // per-document marks (tokenizer_config.h)
  int threads = 0;  // tokenizing threads; 0 = every core. The output does not depend on it.
  std::string out_dir;
  double val_fraction = 0.05;  // in [0, 1)
  int64_t shard_tokens = 100'000'000;
  uint64_t seed = 1337;
  int doc_blank_lines = 3;  // document separator: this many blank lines; 0 = one per file
  std::string text_field = "text";  // JSONL: the document's key ("a.b" for nested objects)
  BadLines bad_lines = BadLines::fail;  // JSONL: a bad line is an error, or skipped and counted
  int64_t batch_bytes = int64_t{16} << 20;  // text tokenized between two writes (memory bound)
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
  int64_t skipped_lines = 0;  // bad JSONL lines skipped (BadLines::skip)
  int64_t resumed_shards = 0;  // finished by an earlier run and kept
  int64_t stale_shards_removed = 0;  // shards of an earlier run that were not overwritten
  int32_t vocab_size = 0;
  int32_t bos = -1, eos = -1;  // the ids used (-1 = none)
  std::string bos_text, eos_text;  // their decoded text
  int threads = 1;
};

enum class PreparePhase { scanning, tokenizing };

// Called during each pass with the input bytes (on disk, so compressed ones count as such)
// read so far and the total.
using PrepareProgress = std::function<void(PreparePhase phase, int64_t done_bytes, int64_t total_bytes)>;

// Option errors are ConfigErrors; unreadable or empty inputs and unwritable outputs are
// InputErrors naming the file.
PrepareSummary prepare_shards(const PrepareOptions& options, const PrepareProgress& progress);

}  // namespace trainer
