// Replacing a set of files in a folder as one (data prepare's shards, ckpt export's Hugging
// Face folder), so that no reader ever takes a mix of two runs' files for a whole set.
//
// FolderPublication writes <dir>/.publishing (who, and what) before the first file of the new
// set lands, and removes it last, after the earlier set's files that the new one does not
// replace are gone and the folder is synced. A command that fails or dies in between leaves
// the marker, and every reader of such a folder (the shard reader, the Hugging Face folder
// loader) refuses it with check_folder_published, naming the marker, until the command runs
// again. Files of other names in the folder are never touched.
//
// data prepare adds: its shards are staged in <out>/.staging while it holds <out>/.lock
// (DirLock), so no two runs write one folder; the staged shards are renamed into place (each
// rename replaces a namesake atomically).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace trainer {

inline constexpr const char* kPublishingMarker = ".publishing";

class FolderPublication {
 public:
  // Writes the marker ("<holder> publishing <what>"); the folder must exist.
  FolderPublication(std::filesystem::path dir, const std::string& holder, const std::string& what);
  // The new set (`names`) is in place: removes every earlier file that `owned` claims and
  // `names` does not hold, syncs the folder, removes the marker. Returns how many were removed.
  int64_t finish(const std::vector<std::string>& names, const std::function<bool(const std::string&)>& owned);

 private:
  std::filesystem::path dir_;
};

// InputError when `dir` holds the marker of a publication that did not finish; `what` names
// what was being read ("token shard 'X'", "model folder 'D'").
void check_folder_published(const std::string& dir, const std::string& what);

// train_NNNNNN.bin or val_NNNNNN.bin: the names data prepare writes (and so may replace).
bool is_shard_name(const std::string& name);

// Refuses an output directory that is a checkpoint, or that holds something other than a file
// under a shard's name: publishing removes or replaces every such name, and a device or FIFO
// there is never meant to be deleted. Checked before any work, so nothing is left behind.
void check_out_dir(const std::string& dir);

// data prepare's publication: the staged shards (`names`, in `staging`) replace the earlier
// run's in `out`; returns how many old shards had no new namesake. `holder` goes in the marker.
int64_t publish_shards(const std::filesystem::path& out, const std::filesystem::path& staging,
                       const std::vector<std::string>& names, const std::string& holder);

}  // namespace trainer
