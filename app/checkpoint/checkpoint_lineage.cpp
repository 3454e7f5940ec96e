// Lineages and pruning (see checkpoint_lineage.h).
#include "app/checkpoint/checkpoint_lineage.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/core.h>
#include <unistd.h>

#include "app/checkpoint/checkpoint_manifest.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

bool same_dir(const std::string& a, const std::string& b) { return fs::path(a).filename() == fs::path(b).filename(); }

}  // namespace

std::string new_run_id(Comm& world) {
  int32_t words[2] = {0, 0};
  if (world.rank() == 0) {
    std::random_device rd;
    const uint64_t mixed = (uint64_t(rd()) << 32 | rd()) ^ uint64_t(::getpid()) * 0x9e3779b97f4a7c15ull ^
                           uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    words[0] = int32_t(uint32_t(mixed));
    words[1] = int32_t(uint32_t(mixed >> 32));
  }
  world.broadcast(make_tensor(words, DType::i32, Device::cpu, {2}), 0);
  return fmt::format("{:08x}{:08x}", uint32_t(words[1]), uint32_t(words[0]));
}

std::vector<std::string> resume_candidates(const std::string& root) {
  std::vector<std::string> all = list_checkpoints(root);
  const fs::path pointer = fs::path(root) / "latest";
  std::error_code ec;
  std::string latest;
  // A pointer that is not a small regular file (a FIFO would block) is ignored.
  if (!fs::is_regular_file(pointer, ec) || fs::file_size(pointer, ec) > 64 || ec) return all;
  std::ifstream in(pointer);
  if (in && std::getline(in, latest)) {
    for (size_t i = 0; i < all.size(); ++i)
      if (fs::path(all[i]).filename() == latest) {
        std::rotate(all.begin(), all.begin() + long(i), all.begin() + long(i) + 1);
        break;
      }
  }
  return all;
}

std::vector<CkptSummary> list_complete_checkpoints(const std::string& root) {
  std::vector<CkptSummary> out;
  for (const std::string& dir : list_checkpoints(root)) {
    if (!fs::exists(fs::path(dir) / "manifest.yaml")) continue;
    try {
      const CkptManifest m = read_manifest(dir);
      out.push_back(CkptSummary{dir, m.step, m.run, std::isfinite(m.loss)});
    } catch (const InputError&) {
      // Unreadable: nobody's lineage, never pruned.
    }
  }
  return out;
}

std::vector<std::string> checkpoints_to_prune(const std::vector<CkptSummary>& all, const CkptSummary& current,
                                              int keep) {
  if (keep <= 0) return {};
  std::vector<const CkptSummary*> mine;  // newest first, current included
  for (const CkptSummary& c : all)
    if (c.run == current.run && c.step <= current.step && !same_dir(c.dir, current.dir)) mine.push_back(&c);
  mine.insert(mine.begin(), &current);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const CkptSummary* a, const CkptSummary* b) { return a->step > b->step; });
  std::set<const CkptSummary*> kept = {&current};
  for (size_t i = 0; i < mine.size() && int(i) < keep; ++i) kept.insert(mine[i]);
  for (const CkptSummary* c : mine)
    if (c->loss_finite) {
      kept.insert(c);
      break;
    }
  std::vector<std::string> out;
  for (const CkptSummary* c : mine)
    if (!kept.count(c)) out.push_back(c->dir);
  return out;
}

std::vector<std::string> prune_checkpoints(const std::string& root, const CkptSummary& current, int keep) {
  if (keep <= 0) return {};  // keep all: no need to read every manifest under root
  const std::vector<std::string> doomed = checkpoints_to_prune(list_complete_checkpoints(root), current, keep);
  for (const std::string& dir : doomed) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return doomed;
}

}  // namespace trainer
