// CheckpointReader implementation.
#include "app/checkpoint/checkpoint_reader.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kernels/base/errors.h"

namespace trainer {

namespace fs = std::filesystem;

CheckpointReader::CheckpointReader(const std::string& dir) : dir_(dir), manifest_(read_manifest(dir)) {
  // read_manifest validated the manifest: every name is a plain name inside dir, every piece
  // names a tensor of this model and lies within its file.
  table_ = param_table(manifest_.model);
  for (int i = 0; i < int(table_.size()); ++i) spec_index_[table_[i].name] = i;
  for (const CkptFile& f : manifest_.files) {
    const std::string path = (fs::path(dir) / f.name).string();
    RegularFile file(path);
    if (!file.ok() && file.open_errno() == ENOENT)
      throw InputError(path + ": cannot open checkpoint file: " + std::strerror(ENOENT) +
                       " (the checkpoint is incomplete)");
    if (!file.ok()) throw InputError(path + ": " + file.problem() + "; a checkpoint file must be a regular file");
    if (file.size() != f.bytes)
      throw InputError(path + ": size " + std::to_string(file.size()) + " bytes, but the manifest records " +
                       std::to_string(f.bytes) + " (truncated or overwritten)");
    files_.push_back(std::move(file));
  }
}

CheckpointReader::~CheckpointReader() = default;

const std::vector<CheckpointReader::Segment>& CheckpointReader::segments(const std::string& name,
                                                                         OptimizerState state) const {
  auto key = std::make_pair(name, int(state));
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  std::vector<Segment> segs;
  auto si = spec_index_.find(name);
  if (si == spec_index_.end()) throw InputError(dir_ + ": no tensor '" + name + "' in this checkpoint");
  const ParamSpec& spec = table_[si->second];
  for (const CkptPiece& p : manifest_.pieces) {
    if (p.name != name || p.state != state) continue;
    std::vector<Range> runs = tp_runs(spec, p.tp_rank, p.tp);
    int64_t offset = p.offset;
    for (const Range& g : slice_to_global(runs, p.begin, p.end)) {
      segs.push_back({g.begin, g.end, p.file, offset});
      offset += g.size() * 4;
    }
  }
  std::sort(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) { return a.begin < b.begin; });
  return index_.emplace(key, std::move(segs)).first->second;
}

std::set<int> CheckpointReader::files_for(const std::string& name, OptimizerState state,
                                          const std::vector<Range>& ranges) const {
  std::set<int> out;
  const auto& segs = segments(name, state);
  for (const Range& r : ranges) {
    auto it = std::upper_bound(segs.begin(), segs.end(), r.begin, [](int64_t v, const Segment& s) { return v < s.begin; });
    if (it != segs.begin()) --it;
    for (; it != segs.end() && it->begin < r.end; ++it)
      if (it->end > r.begin) out.insert(it->file);
  }
  return out;
}

void CheckpointReader::verify_files(const std::set<int>& files) {
  std::vector<char> buf(size_t(8) << 20);
  for (int f : files) {
    if (verified_.count(f)) continue;
    XXH64_state_t* st = XXH64_createState();
    XXH64_reset(st, 0);
    int64_t pos = 0;
    while (true) {
      ssize_t n = ::pread(files_[size_t(f)].fd(), buf.data(), buf.size(), pos);
      if (n < 0) {
        XXH64_freeState(st);
        throw InputError(dir_ + "/" + manifest_.files[f].name + ": read error: " + std::strerror(errno));
      }
      if (n == 0) break;
      XXH64_update(st, buf.data(), size_t(n));
      pos += n;
    }
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    if (h != manifest_.files[f].xxh64)
      throw InputError(dir_ + "/" + manifest_.files[f].name + ": checksum mismatch (the file is corrupted)");
    verified_.insert(f);
  }
}

void CheckpointReader::verify_all() {
  std::set<int> all;
  for (int i = 0; i < int(manifest_.files.size()); ++i) all.insert(i);
  verify_files(all);
}

void CheckpointReader::read(const std::string& name, OptimizerState state, const std::vector<Range>& ranges, float* out) {
  verify_files(files_for(name, state, ranges));
  const auto& segs = segments(name, state);
  for (const Range& r : ranges) {
    int64_t at = r.begin;
    auto it = std::upper_bound(segs.begin(), segs.end(), at, [](int64_t v, const Segment& s) { return v < s.begin; });
    if (it != segs.begin()) --it;
    while (at < r.end) {
      while (it != segs.end() && it->end <= at) ++it;
      if (it == segs.end() || it->begin > at)
        throw InputError(dir_ + ": element " + std::to_string(at) + " of " + name + " (" + optimizer_state_name(state) +
                         ") is not stored in any file");
      int64_t n = std::min(r.end, it->end) - at;
      int64_t offset = it->offset + (at - it->begin) * 4;
      size_t want = size_t(n) * 4, got = 0;
      char* dst = reinterpret_cast<char*>(out);
      while (got < want) {
        ssize_t k = ::pread(files_[size_t(it->file)].fd(), dst + got, want - got, offset + int64_t(got));
        if (k <= 0) throw InputError(dir_ + "/" + manifest_.files[it->file].name + ": short read");
        got += size_t(k);
      }
      out += n;
      at += n;
    }
  }
}

std::vector<float> CheckpointReader::read_full(const std::string& name, OptimizerState state) {
  auto si = spec_index_.find(name);
  if (si == spec_index_.end()) throw InputError(dir_ + ": no tensor '" + name + "' in this checkpoint");
  std::vector<float> out(table_[si->second].numel());
  read(name, state, {{0, int64_t(out.size())}}, out.data());
  return out;
}

std::vector<int64_t> CheckpointReader::shape_of(const std::string& name) const {
  auto si = spec_index_.find(name);
  if (si == spec_index_.end()) throw InputError(dir_ + ": no tensor '" + name + "' in this checkpoint");
  return table_[si->second].shape;
}

std::vector<std::string> list_checkpoints(const std::string& root) {
  std::vector<std::pair<long long, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string n = e.path().filename().string();
    if (n.size() == 13 && n.rfind("step_", 0) == 0 && e.is_directory())
      found.push_back({std::atoll(n.c_str() + 5), e.path().string()});
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

}  // namespace trainer
