// Writing checkpoints (format in checkpoint_manifest.h). Collective over the job:
// 1. every rank writes its file into <dir>/.tmp_step_NNNNNNNN/ and fsyncs it;
// 2. rank 0 gathers sizes and checksums, writes manifest.yaml, fsyncs, renames the directory
//    to step_NNNNNNNN (atomic: a checkpoint is visible only when complete) and updates the
//    `latest` pointer file by an atomic rename;
// 3. older checkpoints of the same run beyond checkpoint.keep are removed, only after the new
//    one is complete, never the new one nor the last with a finite loss (checkpoint_lineage.h).
// Temporary and moved-aside directories carry the run id, so they never collide with another
// run's (and the checkpoint.dir lock keeps a second trainer out of the directory altogether).
// Any failure (full disk, unwritable directory) removes the temporary directory, leaves every
// earlier checkpoint intact and is reported as an InputError on every rank.
#pragma once

#include <string>

#include "app/checkpoint/checkpoint_parts.h"

namespace trainer {

// Who writes: the run's lineage (checkpoint_lineage.h) and the loss of the step saved (NaN when
// that step's gradient norm was not finite: its update may have poisoned the weights).
struct CkptRunInfo {
  std::string run;
  double loss = 0;
};

// Saves `parts` as the state after `step`; returns the new checkpoint's directory; prunes the
// run's own older ones afterwards.
std::string save_checkpoint(const CkptParts& parts, int64_t step, const CkptRunInfo& run);
// Creates checkpoint.dir and writes and removes a probe file there, so an unwritable
// directory is found before training starts rather than at the first save (collective;
// InputError on every rank).
void probe_checkpoint_dir(const std::string& root, Comm& world);

}  // namespace trainer
