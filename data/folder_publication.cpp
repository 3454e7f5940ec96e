// Replacing a set of files in a folder as one (see folder_publication.h).
#include "data/folder_publication.h"

#include <fmt/core.h>

#include <algorithm>
#include <string_view>
#include <system_error>
#include <utility>

#include "kernels/base/atomic_file.h"
#include "data/file_io.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"
#include "kernels/base/output_target.h"

namespace trainer {

namespace fs = std::filesystem;

bool is_shard_name(const std::string& name) {
  std::string_view rest(name);
  if (rest.rfind("train_", 0) == 0) rest.remove_prefix(6);
  else if (rest.rfind("val_", 0) == 0) rest.remove_prefix(4);
  else return false;
  if (rest.size() != 10 || rest.substr(6) != ".bin") return false;
  for (size_t i = 0; i < 6; ++i)
    if (rest[i] < '0' || rest[i] > '9') return false;
  return true;
}

void check_out_dir(const std::string& dir) {
  const std::string problem = checkpoint_dir_problem(dir);
  if (!problem.empty())
    throw InputError(fmt::format("data prepare: cannot write shards into --out '{}': {}", dir, problem));
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_shard_name(it->path().filename().string())) continue;
    const std::string kind = non_regular_target_problem(it->path().string());
    if (!kind.empty()) throw InputError(fmt::format("data prepare: cannot replace '{}': {}", it->path().string(), kind));
  }
}

FolderPublication::FolderPublication(fs::path dir, const std::string& holder, const std::string& what)
    : dir_(std::move(dir)) {
  write_file_atomically((dir_ / kPublishingMarker).string(), "publication marker",
                        fmt::format("{} publishing {}\n", holder, what));
}

int64_t FolderPublication::finish(const std::vector<std::string>& names,
                                  const std::function<bool(const std::string&)>& owned) {
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (name != kPublishingMarker && owned(name) && std::find(names.begin(), names.end(), name) == names.end())
      stale.push_back(entry.path());
  }
  std::error_code ec;
  for (const fs::path& p : stale)
    if (!fs::remove(p, ec) || ec)
      throw InputError(fmt::format("cannot remove '{}' of the earlier set: {}", p.string(), ec.message()));
  // Durable before the marker goes: a crash now must not leave renames the disk forgets.
  sync_directory(dir_.string());
  const fs::path marker = dir_ / kPublishingMarker;
  if (!fs::remove(marker, ec) || ec)
    throw InputError(fmt::format("cannot remove '{}' after publishing: {}", marker.string(), ec.message()));
  sync_directory(dir_.string());
  return static_cast<int64_t>(stale.size());
}

int64_t publish_shards(const fs::path& out, const fs::path& staging, const std::vector<std::string>& names,
                       const std::string& holder) {
  FolderPublication publication(out, holder, fmt::format("{} shards from {}", names.size(), staging.string()));
  std::error_code ec;
  for (const std::string& name : names) {  // rename replaces a namesake atomically
    fs::rename(staging / name, out / name, ec);
    if (ec)
      throw InputError(fmt::format("cannot move '{}' into '{}': {}", (staging / name).string(),
                                   out.string(), ec.message()));
  }
  const int64_t removed = publication.finish(names, is_shard_name);
  fs::remove_all(staging, ec);
  return removed;
}

void check_folder_published(const std::string& dir, const std::string& what) {
  const fs::path marker = (dir.empty() ? fs::path(".") : fs::path(dir)) / kPublishingMarker;
  std::error_code ec;
  if (!fs::exists(marker, ec)) return;
  std::string who;
  try {
    who = read_file(marker.string());
  } catch (const UserError&) {
    who = "unreadable";
  }
  while (!who.empty() && (who.back() == '\n' || who.back() == '\r')) who.pop_back();
  throw InputError(fmt::format(
      "{}: its folder holds {} ({}): a command that replaces the folder's files as one set did not finish, so "
      "they may mix two runs; valid: run that command again (it replaces the whole set and removes the marker)",
      what, marker.string(), excerpt(who)));
}

}  // namespace trainer
