// Hostile checkpoint manifests: a table of mutations of a real (synthetic, data 2 x tensor 2)
// checkpoint's manifest, each an InputError that names the manifest, the entry and the rule,
// raised by read_manifest before anything is opened or allocated; every layout's own manifest
// passes; a FIFO, a device or an oversized file in place of manifest.yaml or of a rank file
// is refused without blocking, while a symlink to a regular file is followed.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>

#include "app/checkpoint/checkpoint_inspect.h"
#include "app/checkpoint/checkpoint_open.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "app/checkpoint/checkpoint_validate.h"
#include "kernels/base/errors.h"
#include "tests/app/test_checkpoint_util.h"

namespace trainer::testing {
namespace {

namespace fs = std::filesystem;

// The index of the first piece of (name, state, tp_rank).
int piece_of(const CkptManifest& m, const std::string& name, OptimizerState state, int tp_rank) {
  for (size_t i = 0; i < m.pieces.size(); ++i)
    if (m.pieces[i].name == name && m.pieces[i].state == state && m.pieces[i].tp_rank == tp_rank) return int(i);
  FAIL("no piece of " << name);
  return -1;
}

struct HostileCase {
  const char* name;
  std::function<void(CkptManifest&)> mutate;
  std::string want;  // after "<dir>/manifest.yaml: "
};

const OptimizerState kMaster = OptimizerState::master;

std::vector<HostileCase> hostile_cases() {
  return {
      {"path traversal", [](CkptManifest& m) { m.files[1].name = "../../x"; },
       "files[1].name '../../x': a checkpoint file must be a plain name inside its directory"},
      {"absolute path", [](CkptManifest& m) { m.files[0].name = "/etc/passwd"; },
       "files[0].name '/etc/passwd': a checkpoint file must be a plain name"},
      {"dot dot", [](CkptManifest& m) { m.files[2].name = ".."; }, "files[2].name '..': a checkpoint file"},
      {"empty name", [](CkptManifest& m) { m.files[0].name = ""; }, "files[0].name '': a checkpoint file"},
      {"NUL in name", [](CkptManifest& m) { m.files[0].name = std::string("rank\0.bin", 9); },
       "files[0].name 'rank\\x00.bin': a checkpoint file"},
      {"duplicate name", [](CkptManifest& m) { m.files[3].name = m.files[1].name; },
       "files[3].name 'rank_00001.bin': also the name of files[1]"},
      {"duplicate rank", [](CkptManifest& m) { m.files[2].rank = 0; }, "files[2].rank 0: also the rank of files[0]"},
      {"rank beyond the world", [](CkptManifest& m) { m.files[1].rank = 4; }, "files[1].rank 4: valid: 0 to 3"},
      {"negative rank", [](CkptManifest& m) { m.files[1].rank = -1; }, "files[1].rank -1: valid: 0 to 3"},
      {"a file too few", [](CkptManifest& m) { m.files.pop_back(); },
       "files: entries 3: a checkpoint holds one file per rank"},
      {"negative bytes", [](CkptManifest& m) { m.files[0].bytes = -8; }, "files[0].bytes -8: a file's size must"},
      {"negative step", [](CkptManifest& m) { m.step = -1; }, "step -1: a checkpoint's step must be >= 0"},
      {"negative loader epoch", [](CkptManifest& m) { m.loader.epoch = -2; }, "loader.epoch -2: must be >= 0"},
      {"negative loader position", [](CkptManifest& m) { m.loader.position = -3; }, "loader.position -3: must be"},
      {"zero data degree", [](CkptManifest& m) { m.dims.data = 0; }, "layout.data 0: a parallel degree must be in"},
      {"zero stage 7", [](CkptManifest& m) { m.zero = 7; }, "layout.zero 7: valid: 0, 1, 2 or 3"},
      {"stages do not sum", [](CkptManifest& m) { m.stage_layers = {5}; },
       "layout.stages: layers 5: the stages must hold model.n_layer 2 layers"},
      {"empty stage", [](CkptManifest& m) { m.stage_layers = {0}; }, "layout.stages[0] 0: every pipeline stage"},
      {"huge n_layer", [](CkptManifest& m) { m.model.n_layer = 1000000000; },
       "model.n_layer 1000000000: must be in [1, 4096]"},
      {"huge d_model", [](CkptManifest& m) { m.model.d_model = 2000000000; }, "model.d_model 2000000000: must be in"},
      {"negative vocab", [](CkptManifest& m) { m.model.vocab_size = -5; }, "model.vocab_size -5: must be in"},
      {"too many parameters", [](CkptManifest& m) { m.model.n_layer = 4096, m.model.d_model = 1 << 17; },
       "parameters; at most 1099511627776 (2^40)"},
      {"heads do not divide d_model", [](CkptManifest& m) { m.model.n_head = 3; },
       "model.d_model 8: must be a multiple of model.n_head 3"},
      {"vocab above padded", [](CkptManifest& m) { m.model.vocab_size = 17; }, "model.vocab_size 17: must be at most"},
      {"file index out of range", [](CkptManifest& m) { m.pieces[5].file = 4; }, "pieces[5].file 4: no such file"},
      {"unknown tensor", [](CkptManifest& m) { m.pieces[0].name = "h.9.ln_1.weight"; },
       "pieces[0].name 'h.9.ln_1.weight': no such tensor in the manifest's model"},
      {"wrong split", [](CkptManifest& m) { m.pieces[piece_of(m, "wte.weight", kMaster, 0)].split = TpSplit::cols; },
       ".split cols: tensor wte.weight is split rows"},
      {"tp degree differs", [](CkptManifest& m) { m.pieces[3].tp = 1; }, "pieces[3].tp 1: must equal layout.tensor 2"},
      {"tp_rank 5 of 2", [](CkptManifest& m) { m.pieces[4].tp_rank = 5; },
       "pieces[4].tp_rank 5: valid: 0 to 1 (tensor-parallel degree 2)"},
      {"unsplit tensor on tp_rank 1",
       [](CkptManifest& m) { m.pieces[piece_of(m, "wpe.weight", kMaster, 0)].tp_rank = 1; },
       "tensor wpe.weight is not split: tensor-parallel rank 0 stores it"},
      {"negative begin", [](CkptManifest& m) { m.pieces[2].begin = -4; }, "pieces[2].begin -4: valid: 0 to"},
      {"end before begin", [](CkptManifest& m) { m.pieces[2].end = m.pieces[2].begin - 1; }, "pieces[2].end"},
      {"range beyond the tensor", [](CkptManifest& m) { m.pieces[2].end = int64_t(1) << 50; },
       "pieces[2].end 1125899906842624: valid: begin"},
      {"negative offset", [](CkptManifest& m) { m.pieces[1].offset = -4; }, "pieces[1].offset -4: its"},
      {"offset beyond the file", [](CkptManifest& m) { m.pieces[1].offset = m.files[size_t(m.pieces[1].file)].bytes; },
       "bytes must lie within rank_00000.bin"},
      {"pieces share bytes", [](CkptManifest& m) { m.pieces[2].offset = m.pieces[1].offset; },
       "its bytes overlap those of pieces[1]"},
      {"overlapping elements",  // tensor-parallel rank 1's half of wte claimed for rank 0, which has it
       [](CkptManifest& m) { m.pieces[piece_of(m, "wte.weight", kMaster, 1)].tp_rank = 0; },
       "both store these elements of wte.weight (master, tp_rank 0)"},
      {"missing coverage", [](CkptManifest& m) { m.pieces[piece_of(m, "wte.weight", kMaster, 1)].end -= 3; },
       "no piece stores these elements of wte.weight (master, tp_rank 1)"},
      {"missing piece",
       [](CkptManifest& m) { m.pieces.erase(m.pieces.begin() + piece_of(m, "ln_f.bias", OptimizerState::v, 0)); },
       "no piece stores these elements of ln_f.bias (adam_v, tp_rank 0)"},
      {"tensor degree that does not divide", [](CkptManifest& m) { m.dims.tensor = 3, m.dims.data = 1, m.files.resize(3); },
       "cannot be cut into 3 equal slices"},
  };
}

TEST_CASE("checkpoint manifest: every layout's own manifest passes validation") {
  for (CkptTestLayout l : {CkptTestLayout{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 2}}) {
    const std::string dir = scratch_dir("ckpt_validate_ok");
    const CkptManifest m = write_synthetic_checkpoint(dir, ckpt_test_config(), l);
    CHECK_NOTHROW(validate_manifest(m, dir + "/manifest.yaml"));
    CHECK_NOTHROW(read_manifest(dir));
  }
}

TEST_CASE("checkpoint manifest: each hostile entry is an InputError naming the manifest, the entry and the rule") {
  const std::string dir = scratch_dir("ckpt_validate_hostile");
  const CkptManifest good = write_synthetic_checkpoint(dir, ckpt_test_config(), {2, 2, 1});
  REQUIRE(good.files.size() == 4);
  const std::vector<HostileCase> cases = hostile_cases();
  CHECK(cases.size() >= 20);
  for (const HostileCase& c : cases) {
    CAPTURE(c.name);
    CkptManifest m = good;
    c.mutate(m);
    write_text_file(dir + "/manifest.yaml", manifest_to_yaml(m));
    const std::string e = error_of([&] { read_manifest(dir); });
    CHECK_MESSAGE(e.find(dir + "/manifest.yaml: ") == 0, e);
    CHECK_MESSAGE(e.find(c.want) != std::string::npos, e);
    // The reader and the file check never get further.
    CHECK(error_of([&] { CheckpointReader r(dir); }) == e);
  }
}

TEST_CASE("checkpoint manifest: malformed entries name the entry") {
  const std::string dir = scratch_dir("ckpt_validate_malformed");
  write_synthetic_checkpoint(dir, ckpt_test_config(), {1, 1, 1});
  const std::string text = read_text_file(dir + "/manifest.yaml");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    REQUIRE(t.find(from) != std::string::npos);
    t.replace(t.find(from), from.size(), to);
    write_text_file(dir + "/manifest.yaml", t);
    return error_of([&] { read_manifest(dir); });
  };
  CHECK(with("rank: 0", "rank: zero").find("files[0].rank 'zero' is not a valid value") != std::string::npos);
  CHECK(with("tp_rank: 0", "tp_rnk: 0").find("pieces[0].tp_rank is missing") != std::string::npos);
  CHECK(with("n_layer: 2", "n_layer: 99999999999").find("model.n_layer '99999999999' is not a valid") !=
        std::string::npos);
  CHECK(with("xxh64: ", "xxh64: -").find("files[0].xxh64 '-") != std::string::npos);
  write_text_file(dir + "/manifest.yaml", "just a scalar\n");
  CHECK(error_of([&] { read_manifest(dir); }).find("not a YAML map") != std::string::npos);
}

TEST_CASE("checkpoint manifest: a FIFO, a device or an oversized manifest is refused without blocking") {
  const std::string dir = scratch_dir("ckpt_validate_manifest_kind");
  const std::string manifest = dir + "/manifest.yaml";
  REQUIRE(::mkfifo(manifest.c_str(), 0600) == 0);
  CHECK(error_of([&] { read_manifest(dir); }).find(manifest + ": not a regular file (a FIFO)") != std::string::npos);
  fs::remove(manifest);
  fs::create_symlink("/dev/zero", manifest);
  CHECK(error_of([&] { read_manifest(dir); }).find(manifest + ": not a regular file (a character device)") !=
        std::string::npos);
  fs::remove(manifest);
  fs::create_directory(manifest);
  CHECK(error_of([&] { read_manifest(dir); }).find("not a regular file (a directory)") != std::string::npos);
  fs::remove(manifest);
  write_text_file(manifest, "format: 1\n");
  fs::resize_file(manifest, uintmax_t(kMaxManifestBytes) + 1);  // sparse: nothing is written
  CHECK(error_of([&] { read_manifest(dir); }).find("a checkpoint manifest must be at most 67108864 bytes") !=
        std::string::npos);
}

TEST_CASE("checkpoint files: a FIFO or a directory is refused without blocking, a symlink to a file is followed") {
  const std::string dir = scratch_dir("ckpt_validate_file_kind");
  const CkptManifest m = write_synthetic_checkpoint(dir, ckpt_test_config(), {1, 2, 1});
  const std::string file = dir + "/rank_00001.bin";
  fs::rename(file, dir + "/elsewhere.bin");
  fs::create_symlink("elsewhere.bin", file);
  {
    CheckpointReader r(dir);
    CHECK_NOTHROW(r.verify_all());
  }
  for (const CkptFileCheck& c : check_checkpoint_files(dir, m)) CHECK(c.problem.empty());
  fs::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  CHECK(error_of([&] { CheckpointReader r(dir); }).find(file + ": not a regular file (a FIFO)") != std::string::npos);
  CHECK(check_checkpoint_files(dir, m)[1].problem.find("not a regular file (a FIFO)") != std::string::npos);
  fs::remove(file);
  fs::create_directory(file);
  CHECK(error_of([&] { CheckpointReader r(dir); }).find("not a regular file (a directory)") != std::string::npos);
  CHECK(check_checkpoint_files(dir, m)[1].problem.find("not a regular file (a directory)") != std::string::npos);
}

}  // namespace
}  // namespace trainer::testing
