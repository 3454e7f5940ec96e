// The resume record of `data prepare`: OUT/.staging/state, rewritten atomically after every
// shard (kernels/base/atomic_file.h), so it never names a shard that is not wholly on disk.
// A rerun whose fingerprint (options, tokenizer, and every input's path, size and mtime) is
// the same, and whose staged shards all exist with the recorded sizes, continues from it:
// the shards named there are finished and are not written again. Anything else (no record, a
// garbled one, another fingerprint, a missing shard) starts afresh: the record is only ever a
// shortcut, never trusted over the inputs.
// Format, text: "trainer-prepare-state 1", "fingerprint BYTES" then that many bytes and a
// newline, then per split "SPLIT TOKENS RESUME_DOC RESUME_SKIP N" and N shard names.
#pragma once

#include <string>

#include "data/shard_sink.h"

namespace trainer {

struct PrepareState {
  std::string fingerprint;
  SinkPoint train, val;
};

void save_prepare_state(const std::string& path, const PrepareState& state);

// False when there is no record or it cannot be read as one.
bool load_prepare_state(const std::string& path, PrepareState* state);

}  // namespace trainer
