// Checkpoint writing (see checkpoint_writer.h).
#include "app/checkpoint/checkpoint_writer.h"

#include <xxhash.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "app/checkpoint/checkpoint_lineage.h"
#include "app/checkpoint/checkpoint_manifest.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "kernels/base/atomic_file.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

// A checkpoint file being written, with its running XXH64 and size (for the manifest).
class FileWriter {
 public:
  explicit FileWriter(const std::string& path) : file_(path), state_(XXH64_createState()) {
    TRAINER_CHECK(state_ != nullptr, "XXH64_createState: out of memory");
    TRAINER_CHECK(XXH64_reset(state_, 0) == XXH_OK, "XXH64_reset failed");
  }
  ~FileWriter() { XXH64_freeState(state_); }
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const void* data, size_t bytes) {
    TRAINER_CHECK(XXH64_update(state_, data, bytes) == XXH_OK, "XXH64_update failed");
    file_.write(data, bytes);
    written_ += int64_t(bytes);
  }
  void finish() { file_.finish(); }
  uint64_t hash() const { return XXH64_digest(state_); }
  int64_t written() const { return written_; }

 private:
  OutputFile file_;
  XXH64_state_t* state_;
  int64_t written_ = 0;
};

// True on every rank when `ok` is true on every rank.
bool all_ok(Comm& world, bool ok) {
  int32_t bad = ok ? 0 : 1;
  world.all_reduce(make_tensor(&bad, DType::i32, Device::cpu, {1}), ReduceOp::max);
  return bad == 0;
}

}  // namespace

std::string save_checkpoint(const CkptParts& parts, int64_t step, const CkptRunInfo& run) {
  Comm& world = parts.world;
  const int rank = world.rank(), size = world.size();
  const std::string root = parts.config.dir;
  const std::string name = step_dir_name(step);
  const std::string final_dir = (fs::path(root) / name).string();
  const std::string tmp_dir = (fs::path(root) / (".tmp_" + name + "." + run.run)).string();
  std::string error;

  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (!ec) fs::remove_all(tmp_dir, ec);
    if (!ec) fs::create_directories(tmp_dir, ec);
    if (ec) error = "cannot create " + tmp_dir + ": " + ec.message();
  }
  bool ok = all_ok(world, error.empty());

  // 1. Every rank writes its own file.
  uint64_t hash = 0;
  int64_t bytes = 0;
  if (ok) {
    char file_name[32];
    std::snprintf(file_name, sizeof file_name, "rank_%05d.bin", rank);
    try {
      FileWriter w((fs::path(tmp_dir) / file_name).string());
      for (const CkptPiece& p : rank_pieces(parts.layout, rank)) {
        const LocalParam& lp = parts.layout.params()[p.local];
        std::vector<float> values = parts.store.read_state(lp, p.state);
        w.write(values.data(), values.size() * 4);
      }
      w.finish();
      hash = w.hash();
      bytes = w.written();
    } catch (const InputError& e) {
      error = e.what();
      std::fprintf(stderr, "rank %d: checkpoint: %s\n", rank, error.c_str());
    }
  }
  ok = all_ok(world, ok && error.empty());

  // 2. Rank 0 gathers sizes and checksums and publishes the checkpoint.
  std::vector<int32_t> mine = {int32_t(bytes & 0xffffffff), int32_t(bytes >> 32), int32_t(hash & 0xffffffff),
                               int32_t(hash >> 32)};
  std::vector<int32_t> all(size_t(4) * size_t(size));
  world.all_gather(make_tensor(all.data(), DType::i32, Device::cpu, {int64_t(all.size())}),
                   make_tensor(mine.data(), DType::i32, Device::cpu, {4}));
  if (ok && rank == 0) {
    try {
      CkptManifest m = parts.run;
      m.program_version = TRAINER_VERSION;
      m.step = step;
      if (parts.loader) m.loader = parts.loader->state();
      m.run = run.run;
      m.loss = run.loss;
      for (int i = 0; i < size; ++i) {
        CkptFile f;
        char file_name[32];
        std::snprintf(file_name, sizeof file_name, "rank_%05d.bin", i);
        f.name = file_name;
        f.rank = i;
        f.bytes = int64_t(uint32_t(all[4 * i])) | (int64_t(all[4 * i + 1]) << 32);
        f.xxh64 = uint64_t(uint32_t(all[4 * i + 2])) | (uint64_t(uint32_t(all[4 * i + 3])) << 32);
        m.files.push_back(f);
        const StageLayout other(m.model, layout_options_of(m, i));
        for (CkptPiece& p : rank_pieces(other, i)) m.pieces.push_back(p);
      }
      const std::string manifest = manifest_to_yaml(m);
      {
        FileWriter w((fs::path(tmp_dir) / "manifest.yaml").string());
        w.write(manifest.data(), manifest.size());
        w.finish();
      }
      sync_directory(tmp_dir);
      std::error_code ec;
      if (fs::exists(final_dir)) {
        std::string old = (fs::path(root) / (".old_" + name + "." + run.run)).string();
        fs::remove_all(old, ec);
        fs::rename(final_dir, old, ec);
        if (ec) throw InputError("cannot move aside " + final_dir + ": " + ec.message());
        fs::remove_all(old, ec);
      }
      if (::rename(tmp_dir.c_str(), final_dir.c_str()) != 0)
        throw InputError(std::string("cannot rename to ") + final_dir + ": " + std::strerror(errno));
      sync_directory(root);
      write_checkpoint_file_atomically((fs::path(root) / "latest").string(), "checkpoint pointer", name + "\n");
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  ok = all_ok(world, ok && error.empty());
  if (!ok) {
    if (rank == 0) {
      std::error_code ec;
      fs::remove_all(tmp_dir, ec);
    }
    std::string previous;
    for (const CkptSummary& c : list_complete_checkpoints(root))
      if (c.run == run.run && c.step < step) {
        previous = c.dir;
        break;
      }
    const std::string keep = previous.empty() ? "this run has no earlier checkpoint"
                                              : "this run's previous checkpoint " + previous + " is intact";
    throw InputError("checkpoint.dir: writing " + final_dir + " failed" + (error.empty() ? " on another rank (see its message)" : ": " + error) +
                     "; " + keep + "; training stops here");
  }
  if (rank == 0)
    prune_checkpoints(root, CkptSummary{final_dir, step, run.run, std::isfinite(run.loss)}, parts.config.keep);
  world.barrier();
  return final_dir;
}

void probe_checkpoint_dir(const std::string& root, Comm& world) {
  std::string error;
  if (world.rank() == 0) {
    try {
      std::error_code ec;
      fs::create_directories(root, ec);
      if (ec) throw InputError("cannot create " + root + ": " + ec.message());
      const std::string probe = (fs::path(root) / ".write_probe").string();
      {
        FileWriter w(probe);
        w.write("ok\n", 3);
        w.finish();
      }
      fs::remove(probe, ec);
    } catch (const InputError& e) {
      error = e.what();
    }
  }
  if (!all_ok(world, error.empty()))
    throw InputError("checkpoint.dir: " + root + " is not writable" + (error.empty() ? "" : ": " + error) +
                     "; fix it or set checkpoint.dir to another directory");
}

}  // namespace trainer
