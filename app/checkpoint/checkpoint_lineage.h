// Checkpoint lineages and which checkpoints checkpoint.keep removes. A run prunes only its own lineage (the manifest's
// `run`), so a run started fresh in a folder holding another run's checkpoints never deletes
// them, and an old run's higher step numbers never push out what this run just wrote.
//
// After the running job saves `current`, the candidates are its lineage's complete checkpoints
// at or below current's step (above it lies a branch this run abandoned, e.g. when it resumed
// from an older checkpoint because the newest was corrupt: left alone). Kept are: current
// itself, the `keep` newest candidates by step, and the newest candidate whose loss was finite
// (so checkpoints written after the loss became NaN never displace the last good one). keep 0
// keeps everything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/comm.h"

namespace trainer {

// A new lineage id (16 hex digits) from rank 0's entropy, the same on every rank (collective).
std::string new_run_id(Comm& world);

// The order `resume: auto` tries the checkpoints under root: the one `latest` names first (the
// running lineage's newest), then every other by step, newest first.
std::vector<std::string> resume_candidates(const std::string& root);

struct CkptSummary {
  std::string dir;
  int64_t step = 0;
  std::string run;
  bool loss_finite = true;
};

// The complete checkpoints (readable manifest) under root, newest step first.
std::vector<CkptSummary> list_complete_checkpoints(const std::string& root);

// The directories to remove (pure: no file is touched), newest first.
std::vector<std::string> checkpoints_to_prune(const std::vector<CkptSummary>& all, const CkptSummary& current,
                                              int keep);

// Removes what checkpoints_to_prune names under root; returns the removed directories.
std::vector<std::string> prune_checkpoints(const std::string& root, const CkptSummary& current, int keep);

}  // namespace trainer
