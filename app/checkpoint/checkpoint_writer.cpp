// Checkpoint writing (see checkpoint_writer.h).
#include "app/checkpoint/checkpoint_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "app/checkpoint/checkpoint_manifest.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "app/engine/options_from.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

struct WriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw WriteError(errno_text("cannot open", path));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw WriteError(errno_text("cannot fsync", path));
}

class FileWriter {
 public:
  explicit FileWriter(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw WriteError(errno_text("cannot create", path));
    state_ = XXH64_createState();
    XXH64_reset(state_, 0);
  }
  ~FileWriter() {
    if (fd_ >= 0) ::close(fd_);
    XXH64_freeState(state_);
  }
  void write(const void* data, size_t bytes) {
    const char* p = static_cast<const char*>(data);
    XXH64_update(state_, p, bytes);
    while (bytes > 0) {
      ssize_t n = ::write(fd_, p, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw WriteError(errno_text("cannot write", path_));
      p += n;
      bytes -= size_t(n);
      written_ += n;
    }
  }
  void finish() {
    if (::fsync(fd_) != 0) throw WriteError(errno_text("cannot fsync", path_));
    if (::close(fd_) != 0) throw WriteError(errno_text("cannot close", path_));
    fd_ = -1;
  }
  uint64_t hash() const { return XXH64_digest(state_); }
  int64_t written() const { return written_; }

 private:
  std::string path_;
  int fd_ = -1;
  XXH64_state_t* state_;
  int64_t written_ = 0;
};

void write_text_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    FileWriter w(tmp);
    w.write(text.data(), text.size());
    w.finish();
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw WriteError(errno_text("cannot rename to", path));
}

// True on every rank when `ok` is true on every rank.
bool all_ok(Comm& world, bool ok) {
  int32_t bad = ok ? 0 : 1;
  world.all_reduce(make_tensor(&bad, DType::i32, Device::cpu, {1}), ReduceOp::max);
  return bad == 0;
}

}  // namespace

std::string save_checkpoint(Trainer& t, const LoaderState& loader_state) {
  Comm& world = t.host_world();
  const Recipe& r = t.recipe();
  const int rank = world.rank(), size = world.size();
  const std::string root = r.checkpoint.dir;
  const std::string name = step_dir_name(t.step());
  const std::string final_dir = (fs::path(root) / name).string();
  const std::string tmp_dir = (fs::path(root) / (".tmp_" + name)).string();
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
      ParamStore& store = t.store();
      for (const CkptPiece& p : rank_pieces(t.layout(), rank)) {
        const LocalParam& lp = t.layout().params()[p.local];
        std::vector<float> values = store.read_state(lp, p.state);
        w.write(values.data(), values.size() * 4);
      }
      w.finish();
      hash = w.hash();
      bytes = w.written();
    } catch (const WriteError& e) {
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
      CkptManifest m = manifest_from(r);
      m.program_version = TRAINER_VERSION;
      m.step = t.step();
      m.loader = loader_state;
      const GridDims dims = t.grid().dims();
      for (int i = 0; i < size; ++i) {
        CkptFile f;
        char file_name[32];
        std::snprintf(file_name, sizeof file_name, "rank_%05d.bin", i);
        f.name = file_name;
        f.rank = i;
        f.bytes = int64_t(uint32_t(all[4 * i])) | (int64_t(all[4 * i + 1]) << 32);
        f.xxh64 = uint64_t(uint32_t(all[4 * i + 2])) | (uint64_t(uint32_t(all[4 * i + 3])) << 32);
        m.files.push_back(f);
        GridCoords c = grid_coords(dims, i);
        StageLayout other(t.config(), layout_options_from(r, c));
        for (CkptPiece& p : rank_pieces(other, i)) m.pieces.push_back(p);
      }
      const std::string manifest = manifest_to_yaml(m);
      {
        FileWriter w((fs::path(tmp_dir) / "manifest.yaml").string());
        w.write(manifest.data(), manifest.size());
        w.finish();
      }
      fsync_path(tmp_dir);
      std::error_code ec;
      if (fs::exists(final_dir)) {
        std::string old = (fs::path(root) / (".old_" + name)).string();
        fs::remove_all(old, ec);
        fs::rename(final_dir, old, ec);
        if (ec) throw WriteError("cannot move aside " + final_dir + ": " + ec.message());
        fs::remove_all(old, ec);
      }
      if (::rename(tmp_dir.c_str(), final_dir.c_str()) != 0) throw WriteError(errno_text("cannot rename to", final_dir));
      fsync_path(root);
      write_text_atomically((fs::path(root) / "latest").string(), name + "\n");
      fsync_path(root);
    } catch (const WriteError& e) {
      error = e.what();
    }
  }
  ok = all_ok(world, ok && error.empty());
  if (!ok) {
    if (rank == 0) {
      std::error_code ec;
      fs::remove_all(tmp_dir, ec);
    }
    std::vector<std::string> previous = list_checkpoints(root);
    std::string keep = previous.empty() ? "there is no earlier checkpoint" : "the previous checkpoint " + previous.front() + " is intact";
    throw InputError("checkpoint.dir: writing " + final_dir + " failed" + (error.empty() ? " on another rank (see its message)" : ": " + error) +
                     "; " + keep + "; training stops here");
  }
  if (rank == 0) prune_checkpoints(root, r.checkpoint.keep);
  world.barrier();
  return final_dir;
}

void probe_checkpoint_dir(const std::string& root, Comm& world) {
  std::string error;
  if (world.rank() == 0) {
    try {
      std::error_code ec;
      fs::create_directories(root, ec);
      if (ec) throw WriteError("cannot create " + root + ": " + ec.message());
      const std::string probe = (fs::path(root) / ".write_probe").string();
      {
        FileWriter w(probe);
        w.write("ok\n", 3);
        w.finish();
      }
      fs::remove(probe, ec);
    } catch (const WriteError& e) {
      error = e.what();
    }
  }
  if (!all_ok(world, error.empty()))
    throw InputError("checkpoint.dir: " + root + " is not writable" + (error.empty() ? "" : ": " + error) +
                     "; fix it or set checkpoint.dir to another directory");
}

void prune_checkpoints(const std::string& root, int keep) {
  if (keep <= 0) return;
  std::vector<std::string> all = list_checkpoints(root);
  int complete = 0;
  for (const std::string& dir : all) {
    if (!fs::exists(fs::path(dir) / "manifest.yaml")) continue;
    if (++complete > keep) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }
}

}  // namespace trainer
