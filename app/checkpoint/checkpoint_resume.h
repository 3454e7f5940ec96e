// Resuming: checkpoint.resume picks where a run starts.
//   never — a fresh start;
//   auto  — the checkpoint `latest` names, else the newest complete and valid one in
//           checkpoint.dir; one with a missing
//           file, a wrong size or a bad checksum is reported and the previous one tried; none
//           found means a fresh start (said so);
//   PATH  — that checkpoint; any problem with it is an error.
// Validation happens on every rank for the files it will read, with a job-wide agreement
// before any state is changed. A checkpoint of a differently shaped model is a ConfigError
// naming the first mismatching tensor (never skipped). Any parallel layout may load any
// checkpoint: tensors are read by global name and element range.
#pragma once

#include <string>

#include "app/checkpoint/checkpoint_parts.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "kernels/base/reporting.h"

namespace trainer {

struct Resumed {
  std::string dir;  // the checkpoint loaded, "" for a fresh start
  std::string run;  // its lineage ("" for a fresh start or a checkpoint older than lineages)
  int64_t step = 0; // the step it was saved after (0 for a fresh start)
  std::string recipe_yaml;  // the recipe it was saved under ("" for a fresh start)
};
// Collective; the rank with Reporting::on prints the choice. `auto` tries the checkpoint that
// `latest` names first (see resume_candidates).
Resumed resume_from_checkpoint(const CkptParts& parts, Reporting reporting);
// Throws ConfigError when the checkpoint's model shape differs from the trainer's.
void check_model_matches(const CheckpointReader& reader, const GptConfig& config);
// What load_checkpoint reads: everything a resume needs, or the weights alone (generation:
// the moment files are neither read nor checked).
enum class LoadStates : uint8_t { all, weights };
// Loads parameters, and with LoadStates::all the optimizer state and data position; returns the
// step saved (collective; each file is checked against its checksum when first read).
int64_t load_checkpoint(const CkptParts& parts, CheckpointReader& reader, LoadStates states = LoadStates::all);
// A rollback's reload of this run's checkpoint `dir` (collective): validated as a resume is,
// then loaded; the data position is left past the batches already read (the ones that led to
// the rollback are never trained on). Returns the step saved. A problem is an InputError on
// every rank.
int64_t roll_back_to(const CkptParts& parts, const std::string& dir);

}  // namespace trainer
