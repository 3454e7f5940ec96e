// Shard publication (see shard_publication.h).
#include "data/shard_publication.h"

#include <fmt/core.h>

#include <algorithm>
#include <string_view>
#include <system_error>

#include "kernels/base/atomic_file.h"
#include "kernels/base/errors.h"
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

int64_t publish_shards(const fs::path& out, const fs::path& staging, const std::vector<std::string>& names,
                       const std::string& holder) {
  const fs::path marker = out / kPublishingMarker;
  write_file_atomically(marker.string(), "publication marker",
                        fmt::format("{} publishing {} shards from {}\n", holder, names.size(), staging.string()));
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (is_shard_name(name) && std::find(names.begin(), names.end(), name) == names.end())
      stale.push_back(entry.path());
  }
  std::error_code ec;
  for (const fs::path& p : stale)
    if (!fs::remove(p, ec) || ec)
      throw InputError(fmt::format("cannot remove the old shard '{}': {}", p.string(),
                                   ec.message()));
  for (const std::string& name : names) {  // rename replaces a namesake atomically
    fs::rename(staging / name, out / name, ec);
    if (ec)
      throw InputError(fmt::format("cannot move '{}' into '{}': {}", (staging / name).string(),
                                   out.string(), ec.message()));
  }
  // Durable before the marker goes: a crash now must not leave renames the disk forgets.
  sync_directory(out.string());
  if (!fs::remove(marker, ec) || ec)
    throw InputError(fmt::format("cannot remove '{}' after publishing: {}", marker.string(), ec.message()));
  sync_directory(out.string());
  fs::remove_all(staging, ec);
  return static_cast<int64_t>(stale.size());
}

void check_shard_published(const std::string& shard) {
  const fs::path dir = fs::path(shard).parent_path();
  const fs::path marker = (dir.empty() ? fs::path(".") : dir) / kPublishingMarker;
  std::error_code ec;
  if (!fs::exists(marker, ec)) return;
  throw InputError(fmt::format(
      "token shard '{}': its folder holds {}, left by a data prepare that did not finish moving its shards into "
      "place, so they may mix two runs; valid: run that data prepare again (it replaces the whole set and "
      "removes the marker)",
      shard, marker.string()));
}

}  // namespace trainer
