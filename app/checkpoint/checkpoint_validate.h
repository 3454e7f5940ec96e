// Checking a parsed checkpoint manifest before anything is opened or allocated from it. A
// manifest is hostile input: every rule below is an InputError that names the manifest, the
// entry (files[3].name, pieces[12].end, ...), its value and the rule.
//   format, step, loader, layout: format == kCheckpointFormat; step >= 0; loader epoch and
//     position >= 0; data, tensor, pipeline in [1, kMaxCkptDegree]; zero in 0..3; one stage
//     entry per pipeline stage, each >= 1 layer, summing to model.n_layer.
//   model: every dimension in [1, its limit below]; n_head divides d_model; vocab_size <=
//     padded_vocab; at most kMaxCkptParams parameters; layout.tensor divides every split
//     tensor (what tp_runs needs).
//   files: names are plain names inside the checkpoint directory (not empty, no '/', not '.'
//     or '..', no NUL), unique; one file per rank (data x tensor x pipeline of them), each
//     rank in [0, world) once; bytes >= 0.
//   pieces: file index valid; tensor known for the model; split as the model's table says;
//     tp == layout.tensor; tp_rank in [0, tp), and 0 for an unsplit tensor (stored once);
//     0 <= begin <= end <= the local slice's size; offset >= 0 and offset + 4 (end - begin)
//     <= the file's bytes; no two pieces share bytes of a file; the pieces of each (tensor,
//     state, tp_rank) cover its local slice exactly once (no overlap, no gap).
// Together these bound every later allocation by the files' recorded (and then checked)
// sizes. Cost: O(pieces log pieces + tensors).
#pragma once

#include <cstdint>
#include <string>

#include "app/checkpoint/checkpoint_manifest.h"

namespace trainer {

// Limits on a manifest's model: far above any GPT-2 shape this trainer can train, low enough
// that the parameter table and the numbers derived from it stay small and cannot overflow.
constexpr int kMaxCkptLayers = 4096;
constexpr int kMaxCkptHeads = 4096;
constexpr int kMaxCkptDModel = 1 << 17;  // 131072
constexpr int kMaxCkptVocab = 1 << 24;   // vocab_size and padded_vocab
constexpr int kMaxCkptSeqLen = 1 << 24;  // max_seq_len
constexpr int64_t kMaxCkptParams = int64_t(1) << 40;
constexpr int kMaxCkptDegree = 1 << 20;  // each of data, tensor, pipeline

// Throws InputError naming `path` (the manifest) on the first rule `m` breaks.
void validate_manifest(const CkptManifest& m, const std::string& path);

}  // namespace trainer
