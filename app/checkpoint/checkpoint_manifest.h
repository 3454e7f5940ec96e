// Checkpoint format. A checkpoint is a directory step_NNNNNNNN/ holding manifest.yaml and one
// binary file per rank (rank_NNNNN.bin, raw little-endian f32). The manifest records the step,
// the data loader position, the seed (all random numbers are counter-based, keyed by seed and
// step, so that is the whole RNG state), the layout, the model shape, the resolved recipe, the
// program version, every file with its size and XXH64 checksum, and every stored piece: which
// tensor (global name, global shape), which state (fp32 master weights, AdamW m or v), which
// tensor-parallel slice (split, tp rank, tp degree) and which range of that slice, in which
// file at which byte offset. Each global element of each state is stored exactly once, so a
// checkpoint can be read into any layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/loader.h"
#include "model/gpt_config.h"
#include "model/optimizer_state.h"
#include "model/param_table.h"
#include "model/stage_layout.h"
#include "parallel/parallel_dims.h"

namespace trainer {

constexpr int kCheckpointFormat = 1;

struct CkptFile {
  std::string name;  // relative to the checkpoint directory
  int rank = 0;
  int64_t bytes = 0;
  uint64_t xxh64 = 0;
};

struct CkptPiece {
  std::string name;  // global tensor name
  OptimizerState state = OptimizerState::master;
  int file = 0;        // index into files
  int64_t offset = 0;  // bytes into the file
  TpSplit split = TpSplit::none;
  int tp_rank = 0, tp = 1;
  int64_t begin = 0, end = 0;  // range of the tensor-parallel local slice
  int local = -1;              // index into the writing rank's layout params (not stored)
};

struct CkptManifest {
  int format = kCheckpointFormat;
  std::string program_version;
  int64_t step = 0;
  uint64_t seed = 0;
  // The run's lineage: made by a run that starts fresh, inherited on resume; "" in checkpoints
  // written before lineages existed. Pruning only touches its own run's checkpoints.
  std::string run;
  double loss = 0;  // training loss of the step saved (NaN or inf once training diverged)
  LoaderState loader;
  // The layout that wrote it; dims.virtual_stages is 1 in checkpoints written before them.
  ParallelDims dims;
  int zero = 0;
  std::vector<int> stage_layers;  // layers per virtual stage (dims.n_stages() entries)
  GptConfig model;
  std::string recipe_yaml;
  std::vector<CkptFile> files;
  std::vector<CkptPiece> pieces;
};

std::string manifest_to_yaml(const CkptManifest& manifest);
// Parses manifest.yaml in dir and checks it (validate_manifest, checkpoint_validate.h); a
// missing, non-regular, oversized, malformed or invalid manifest is an InputError naming it
// and the entry.
CkptManifest read_manifest(const std::string& dir);
// The same for manifest text in memory; `path` names the manifest in messages.
CkptManifest parse_manifest(const std::string& text, const std::string& path);

// The pieces rank `file_index`'s file holds for a rank with layout `options`, in file order:
// for each primary parameter (tied copies and tensor-replicated copies on tp_rank > 0 are
// skipped) and each state, the rank's owned slice. Offsets are filled in sequence.
std::vector<CkptPiece> rank_pieces(const StageLayout& layout, int file_index);
// What rank `rank` of the run that wrote `manifest` held (its StageLayout's options).
LayoutOptions layout_options_of(const CkptManifest& manifest, int rank);

// The global flat ranges covered by local-slice range [begin, end) of a tensor split with
// `runs` (tp_runs()), in local order.
std::vector<Range> slice_to_global(const std::vector<Range>& runs, int64_t begin, int64_t end);

std::string step_dir_name(int64_t step);

}  // namespace trainer
