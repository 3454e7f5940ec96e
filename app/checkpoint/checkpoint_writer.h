// Writing checkpoints (format in checkpoint_manifest.h). Collective over the job:
// 1. every rank writes its file into <dir>/.tmp_step_NNNNNNNN/ and fsyncs it;
// 2. rank 0 gathers sizes and checksums, writes manifest.yaml, fsyncs, renames the directory
//    to step_NNNNNNNN (atomic: a checkpoint is visible only when complete) and updates the
//    `latest` pointer file by an atomic rename;
// 3. older checkpoints beyond checkpoint.keep are removed, only after the new one is complete.
// Any failure (full disk, unwritable directory) removes the temporary directory, leaves every
// earlier checkpoint intact and is reported as an InputError on every rank.
#pragma once

#include <string>

#include "app/engine/trainer.h"
#include "data/loader.h"

namespace trainer {

std::string save_checkpoint(Trainer& trainer, const LoaderState& loader_state);
// Creates checkpoint.dir and writes and removes a probe file there, so an unwritable
// directory is found before training starts rather than at the first save (collective;
// InputError on every rank).
void probe_checkpoint_dir(const std::string& root, Comm& world);
// Keeps the newest `keep` complete checkpoints under root (keep 0 keeps all).
void prune_checkpoints(const std::string& root, int keep);

}  // namespace trainer
