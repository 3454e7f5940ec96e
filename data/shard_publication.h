// How `data prepare` puts a run's shards into its --out, and how readers know the set is whole.
//
// A run stages its shards in <out>/.staging while it holds <out>/.lock (DirLock), so no two
// runs write one folder. Publication then writes <out>/.publishing (who, and how many shards),
// removes the earlier run's shards that have no namesake, renames the staged ones into place
// (each rename replaces a namesake atomically) and removes the marker last. The folder thus
// holds exactly one run's shards or the marker: a crash mid-publication leaves the marker, and
// the shard reader (ShardSet) refuses a folder that holds it instead of training on a mix; the
// rerun of data prepare publishes again and removes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace trainer {

inline constexpr const char* kPublishingMarker = ".publishing";

// train_NNNNNN.bin or val_NNNNNN.bin: the names data prepare writes (and so may replace).
bool is_shard_name(const std::string& name);

// Refuses an output directory that is a checkpoint, or that holds something other than a file
// under a shard's name: publishing removes or replaces every such name, and a device or FIFO
// there is never meant to be deleted. Checked before any work, so nothing is left behind.
void check_out_dir(const std::string& dir);

// Replaces the shards of an earlier run in `out` with the staged ones (`names`, in `staging`),
// as above; returns how many old shards had no new namesake. `holder` is written in the marker.
int64_t publish_shards(const std::filesystem::path& out, const std::filesystem::path& staging,
                       const std::vector<std::string>& names, const std::string& holder);

// InputError when the folder holding `shard` has the marker of an unfinished publication.
void check_shard_published(const std::string& shard);

}  // namespace trainer
