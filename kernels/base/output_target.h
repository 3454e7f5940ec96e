// Where the program may write a file it was asked to write (an export, a token shard, an
// llm.c model file, the metrics log). Two kinds of target are refused before anything is
// written, as InputErrors "cannot write WHAT 'PATH': <why>; <what to do>":
// - a path that exists and is not a regular file (a device, a FIFO, a socket, a directory):
//   replacing /dev/sda or a FIFO by a regular file, or blocking on the FIFO, is never meant;
//   links are followed, so a link to a regular file is fine;
// - a path inside a checkpoint: its directory is a step_NNNNNNNN folder holding manifest.yaml,
//   or a checkpoint directory (one holding `latest` or such a folder). Exporting onto a rank
//   file or a manifest would destroy the checkpoint being exported, and a stray file in a
//   checkpoint directory is mistaken for nothing but clutters what `checkpoint.keep` prunes.
//   The directory is resolved first (links, "..") so no spelling slips past the rule. Only the
//   checkpoint writer writes there, through its own calls (atomic_file.h).
// One rule for every output path's missing parent folders (an export's --out, --logits,
// log.metrics, log.trace, data prepare --out, checkpoint.dir): they are created, as mkdir -p
// would; a parent that cannot be created (a regular file on the way, no permission) is an
// InputError naming the path, the folder and the reason.
#pragma once

#include <string>

namespace trainer {

// The refusal of a path that exists and is not a regular file, or "" when it is missing or
// a regular file (or a link to one).
std::string non_regular_target_problem(const std::string& path);

// The refusal of a directory that is a checkpoint or a checkpoint directory (resolved first),
// or "" for any other (or one that cannot be resolved: creating in it will say why).
std::string checkpoint_dir_problem(const std::string& dir);

// Both rules above; `what` names the file in the message ("safetensors file").
void check_output_target(const std::string& path, const std::string& what);

// The parent folders rule above: creates the folders `path` needs.
void create_parent_folders(const std::string& path, const std::string& what);

// Whether `dir` is a checkpoint (step_NNNNNNNN holding manifest.yaml) or a checkpoint
// directory (holding `latest` or a checkpoint); false for anything that cannot be read.
bool is_checkpoint_step_dir(const std::string& dir);
bool is_checkpoint_root_dir(const std::string& dir);

}  // namespace trainer
