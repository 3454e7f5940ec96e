// Looking into checkpoints without training (trainer ckpt inspect, export): finding the
// checkpoint a path means, checking every file against the manifest, and printing a summary
// with every tensor's shape, dtype and L2 norms. Single process, no MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_manifest.h"

namespace trainer {

// A step_NNNNNNNN directory as it is; any other directory is a checkpoint.dir root and means
// its newest checkpoint that has a manifest. Neither is an InputError naming the path.
std::string resolve_checkpoint_dir(const std::string& path);

struct CkptFileCheck {
  std::string name;
  int rank = 0;
  int64_t recorded_bytes = 0;
  int64_t actual_bytes = -1;  // -1: missing
  uint64_t recorded_xxh64 = 0;
  std::string problem;        // "" when the size and the checksum match the manifest
};

// Every file of the manifest checked for existence, size and XXH64 checksum.
std::vector<CkptFileCheck> check_checkpoint_files(const std::string& dir, const CkptManifest& manifest);

// Prints the checkpoint at `path` (see resolve_checkpoint_dir) to stdout: step, program
// version, recipe summary, layout, files with their check, and every tensor with the L2 norm of
// each of `states`. A file that fails its check is listed and then thrown as an InputError
// (exit code 2) before the tensors.
void inspect_checkpoint(const std::string& path, const std::vector<OptimizerState>& states);

}  // namespace trainer
