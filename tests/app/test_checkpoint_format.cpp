// Checkpoint format and reader: the manifest round-trips through YAML, slices map to global
// ranges, every layout stores every element of every state exactly once and reads back whole;
// truncated, corrupted and missing files are detected and named; checkpoint directories are
// listed, pruned and resolved as documented; a differently shaped model is refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "app/checkpoint/checkpoint_inspect.h"
#include "app/checkpoint/checkpoint_lineage.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "app/checkpoint/checkpoint_resume.h"
#include "app/checkpoint/checkpoint_writer.h"
#include "kernels/base/errors.h"
#include "tests/app/test_checkpoint_util.h"

namespace trainer::testing {
namespace {

namespace fs = std::filesystem;

const CkptTestLayout kLayouts[] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 2}};

std::string layout_name(CkptTestLayout l) {
  return "data " + std::to_string(l.data) + " x tensor " + std::to_string(l.tensor) + " x pipeline " +
         std::to_string(l.pipeline);
}

void flip_byte(const std::string& path, int64_t offset) {
  std::vector<char> bytes = read_bytes_file(path);
  bytes.at(size_t(offset)) = char(~bytes.at(size_t(offset)));
  write_bytes_file(path, bytes);
}

TEST_CASE("checkpoint manifest: the YAML round trip keeps every field") {
  const std::string dir = scratch_dir("ckpt_manifest_roundtrip");
  CkptManifest m = write_synthetic_checkpoint(dir, ckpt_test_config(), {2, 2, 2}, 123456789012LL);
  m.files[0].xxh64 = 0xfedcba9876543210ULL;  // above INT64_MAX: the hex text must keep all 64 bits
  m.recipe_yaml += "data:\n  train: \"a b/*.bin\"\n";
  write_text_file(dir + "/manifest.yaml", manifest_to_yaml(m));
  const CkptManifest r = read_manifest(dir);
  CHECK(r.format == kCheckpointFormat);
  CHECK(r.program_version == m.program_version);
  CHECK(r.step == 123456789012LL);
  CHECK(r.seed == m.seed);
  CHECK(r.loader.epoch == m.loader.epoch);
  CHECK(r.loader.position == m.loader.position);
  CHECK(r.dims.data == 2);
  CHECK(r.dims.tensor == 2);
  CHECK(r.dims.pipeline == 2);
  CHECK(r.zero == m.zero);
  CHECK(r.stage_layers == m.stage_layers);
  CHECK(r.model.n_layer == m.model.n_layer);
  CHECK(r.model.n_head == m.model.n_head);
  CHECK(r.model.d_model == m.model.d_model);
  CHECK(r.model.vocab_size == m.model.vocab_size);
  CHECK(r.model.padded_vocab == m.model.padded_vocab);
  CHECK(r.model.max_seq_len == m.model.max_seq_len);
  CHECK(r.recipe_yaml == m.recipe_yaml);
  REQUIRE(r.files.size() == 8);
  for (size_t i = 0; i < r.files.size(); ++i) {
    CHECK(r.files[i].name == m.files[i].name);
    CHECK(r.files[i].rank == m.files[i].rank);
    CHECK(r.files[i].bytes == m.files[i].bytes);
    CHECK(r.files[i].xxh64 == m.files[i].xxh64);
  }
  REQUIRE(r.pieces.size() == m.pieces.size());
  for (size_t i = 0; i < r.pieces.size(); ++i) {
    const CkptPiece &a = r.pieces[i], &b = m.pieces[i];
    CHECK(a.name == b.name);
    CHECK(a.state == b.state);
    CHECK(a.file == b.file);
    CHECK(a.offset == b.offset);
    CHECK(a.split == b.split);
    CHECK(a.tp_rank == b.tp_rank);
    CHECK(a.tp == b.tp);
    CHECK(a.begin == b.begin);
    CHECK(a.end == b.end);
  }
}

TEST_CASE("checkpoint manifest: missing, malformed or of another format is an InputError naming it") {
  const std::string dir = scratch_dir("ckpt_manifest_bad");
  CHECK(error_of([&] { read_manifest(dir); }).find(dir + "/manifest.yaml: missing") != std::string::npos);
  write_text_file(dir + "/manifest.yaml", "format: 1\nstep: [oops\n");
  CHECK(error_of([&] { read_manifest(dir); }).find("malformed checkpoint manifest") != std::string::npos);
  write_synthetic_checkpoint(dir, ckpt_test_config(), {1, 1, 1});
  std::string text = read_text_file(dir + "/manifest.yaml");
  write_text_file(dir + "/manifest.yaml", "format: 9" + text.substr(text.find('\n')));
  CHECK(error_of([&] { read_manifest(dir); }).find("checkpoint format 9 is not supported") != std::string::npos);
  std::string wide = text;
  wide.replace(wide.find("xxh64: ") + 7, 16, "1ffffffffffffffffff");  // 76 bits
  write_text_file(dir + "/manifest.yaml", wide);
  CHECK(error_of([&] { read_manifest(dir); }).find("malformed checkpoint manifest") != std::string::npos);
  text.replace(text.find("state: adam_m"), 13, "state: adam_q");
  write_text_file(dir + "/manifest.yaml", text);
  CHECK(error_of([&] { read_manifest(dir); }).find("unknown state 'adam_q'") != std::string::npos);
}

TEST_CASE("checkpoint slice_to_global maps a local slice range onto the global runs") {
  // A column-split (4, 6) tensor, tensor rank 1 of 3: two columns of every row.
  const std::vector<Range> runs = {{2, 4}, {8, 10}, {14, 16}, {20, 22}};
  auto same = [](const std::vector<Range>& a, const std::vector<Range>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].begin != b[i].begin || a[i].end != b[i].end) return false;
    return true;
  };
  CHECK(same(slice_to_global(runs, 0, 8), runs));
  CHECK(same(slice_to_global(runs, 1, 5), {{3, 4}, {8, 10}, {14, 15}}));
  CHECK(same(slice_to_global(runs, 2, 4), {{8, 10}}));
  CHECK(same(slice_to_global(runs, 7, 8), {{21, 22}}));
  CHECK(slice_to_global(runs, 3, 3).empty());
  CHECK(same(slice_to_global({{0, 100}}, 10, 20), {{10, 20}}));
}

TEST_CASE("checkpoint rank pieces store every element of every state exactly once, in any layout") {
  const GptConfig config = ckpt_test_config();
  for (CkptTestLayout l : kLayouts) {
    CAPTURE(layout_name(l));
    const std::string dir = scratch_dir("ckpt_pieces");
    const CkptManifest m = write_synthetic_checkpoint(dir, config, l);
    const std::vector<ParamSpec> table = param_table(config);
    std::map<std::pair<std::string, int>, std::vector<int>> seen;
    for (const ParamSpec& s : table)
      for (int st = 0; st < 3; ++st) seen[{s.name, st}].assign(size_t(s.numel()), 0);
    for (const CkptPiece& p : m.pieces) {
      const ParamSpec* spec = nullptr;
      for (const ParamSpec& s : table)
        if (s.name == p.name) spec = &s;
      REQUIRE(spec != nullptr);
      for (const Range& g : slice_to_global(tp_runs(*spec, p.tp_rank, p.tp), p.begin, p.end))
        for (int64_t i = g.begin; i < g.end; ++i) ++seen[{p.name, int(p.state)}][size_t(i)];
    }
    for (const auto& entry : seen) {
      const auto& key = entry.first;  // no structured binding: clang 14 cannot capture one
      const auto& counts = entry.second;
      CAPTURE(key.first);
      CHECK(std::count(counts.begin(), counts.end(), 1) == int64_t(counts.size()));
    }
  }
}

TEST_CASE("checkpoint reader reads every tensor whole and in parts, whatever layout wrote it") {
  const GptConfig config = ckpt_test_config();
  for (CkptTestLayout l : kLayouts) {
    CAPTURE(layout_name(l));
    const std::string dir = scratch_dir("ckpt_reader");
    write_synthetic_checkpoint(dir, config, l);
    CheckpointReader reader(dir);
    CHECK(reader.manifest().files.size() == size_t(l.data * l.tensor * l.pipeline));
    for (const ParamSpec& s : param_table(config)) {
      CHECK(reader.shape_of(s.name) == s.shape);
      for (OptimizerState st : kOptimizerStates) {
        CAPTURE(s.name);
        CAPTURE(optimizer_state_name(st));
        const std::vector<float> full = reader.read_full(s.name, st);
        REQUIRE(int64_t(full.size()) == s.numel());
        int64_t wrong = 0;
        for (int64_t i = 0; i < s.numel(); ++i) wrong += full[size_t(i)] != ckpt_pattern(s.name, st, i);
        CHECK(wrong == 0);
      }
    }
    // Two disjoint parts of the embedding, crossing tensor-parallel slices.
    const std::vector<Range> parts = {{3, 11}, {60, 75}};
    std::vector<float> got(8 + 15);
    reader.read("wte.weight", OptimizerState::v, parts, got.data());
    for (size_t i = 0; i < 8; ++i) CHECK(got[i] == ckpt_pattern("wte.weight", OptimizerState::v, 3 + int64_t(i)));
    for (size_t i = 0; i < 15; ++i) CHECK(got[8 + i] == ckpt_pattern("wte.weight", OptimizerState::v, 60 + int64_t(i)));
    CHECK(!reader.files_for("wte.weight", OptimizerState::v, parts).empty());
    const std::string missing = error_of([&] { reader.read_full("h.9.ln_1.weight", OptimizerState::master); });
    CHECK(missing.find("no tensor 'h.9.ln_1.weight'") != std::string::npos);
  }
}

TEST_CASE("checkpoint reader names a truncated, a corrupted and a missing file") {
  const GptConfig config = ckpt_test_config();
  const std::string dir = scratch_dir("ckpt_reader_bad");
  write_synthetic_checkpoint(dir, config, {1, 2, 1});
  {
    CheckpointReader ok(dir);
    CHECK_NOTHROW(ok.verify_all());
  }
  const std::string file = dir + "/rank_00001.bin";
  const std::vector<char> good = read_bytes_file(file);

  write_bytes_file(file, std::vector<char>(good.begin(), good.end() - 4));
  std::string e = error_of([&] { CheckpointReader r(dir); });
  CHECK(e.find("rank_00001.bin: size") != std::string::npos);
  CHECK(e.find("truncated") != std::string::npos);

  std::vector<char> bad = good;
  bad[bad.size() / 2] = char(~bad[bad.size() / 2]);
  write_bytes_file(file, bad);
  {
    CheckpointReader r(dir);  // same size: only the checksum tells
    CHECK(error_of([&] { r.verify_files({1}); }).find("rank_00001.bin: checksum mismatch") != std::string::npos);
    CHECK_NOTHROW(r.verify_files({0}));
  }
  {
    CheckpointReader r(dir);  // reading any tensor stored in the bad file verifies it first
    CHECK(error_of([&] { r.read_full("wte.weight", OptimizerState::master); }).find("rank_00001.bin: checksum mismatch") !=
          std::string::npos);
  }

  fs::remove(file);
  e = error_of([&] { CheckpointReader r(dir); });
  CHECK(e.find("rank_00001.bin: cannot open") != std::string::npos);
  CHECK(e.find("incomplete") != std::string::npos);
}

TEST_CASE("checkpoint file check reports each file ok, truncated, corrupted or missing") {
  const std::string dir = scratch_dir("ckpt_file_check");
  const CkptManifest m = write_synthetic_checkpoint(dir, ckpt_test_config(), {2, 1, 2});
  for (const CkptFileCheck& c : check_checkpoint_files(dir, m)) CHECK(c.problem.empty());
  const std::vector<char> good = read_bytes_file(dir + "/rank_00001.bin");
  write_bytes_file(dir + "/rank_00001.bin", std::vector<char>(good.begin(), good.begin() + 8));
  flip_byte(dir + "/rank_00002.bin", 5);
  fs::remove(dir + "/rank_00003.bin");
  const std::vector<CkptFileCheck> checks = check_checkpoint_files(dir, m);
  REQUIRE(checks.size() == 4);
  CHECK(checks[0].problem.empty());
  CHECK(checks[1].actual_bytes == 8);
  CHECK(checks[1].problem.find("truncated") != std::string::npos);
  CHECK(checks[2].problem.find("checksum mismatch") != std::string::npos);
  CHECK(checks[3].actual_bytes == -1);
  CHECK(checks[3].problem.find("missing") != std::string::npos);
}

TEST_CASE("checkpoint list, prune and resolve: newest first, temporary and incomplete directories never count") {
  const std::string root = scratch_dir("ckpt_list");
  const GptConfig config = ckpt_test_config();
  for (int step : {5, 10, 20, 40}) {
    fs::create_directories(root + "/" + step_dir_name(step));
    write_synthetic_checkpoint(root + "/" + step_dir_name(step), config, {1, 1, 1}, step);
  }
  fs::create_directories(root + "/.tmp_step_00000080");   // a save in progress
  fs::create_directories(root + "/step_00000060");        // incomplete: no manifest
  write_text_file(root + "/step_00000070", "not a directory");
  const std::vector<std::string> all = list_checkpoints(root);
  REQUIRE(all.size() == 5);
  CHECK(fs::path(all[0]).filename() == "step_00000060");
  CHECK(fs::path(all[4]).filename() == "step_00000005");
  CHECK(list_checkpoints(root + "/nowhere").empty());

  CHECK(resolve_checkpoint_dir(root) == root + "/step_00000040");
  CHECK(resolve_checkpoint_dir(root + "/step_00000010") == root + "/step_00000010");
  CHECK(resolve_checkpoint_dir(root + "/step_00000060") == root + "/step_00000060");  // read_manifest says why
  CHECK(error_of([&] { resolve_checkpoint_dir(root + "/nowhere"); }).find("no such directory") != std::string::npos);
  CHECK(error_of([&] { resolve_checkpoint_dir(root + "/.tmp_step_00000080"); }).find("neither a checkpoint") !=
        std::string::npos);

  prune_checkpoints(root, CkptSummary{root + "/step_00000040", 40, "", true}, 2);
  CHECK(fs::exists(root + "/step_00000060"));  // incomplete ones do not count and are not touched
  CHECK(fs::exists(root + "/step_00000040/manifest.yaml"));
  CHECK(fs::exists(root + "/step_00000020/manifest.yaml"));
  CHECK(!fs::exists(root + "/step_00000010"));
  CHECK(!fs::exists(root + "/step_00000005"));
  CHECK(fs::exists(root + "/.tmp_step_00000080"));
  prune_checkpoints(root, CkptSummary{root + "/step_00000040", 40, "", true}, 0);  // keep all
  CHECK(fs::exists(root + "/step_00000020/manifest.yaml"));
}

TEST_CASE("checkpoint of a differently shaped model is refused, naming the first mismatching tensor") {
  const std::string dir = scratch_dir("ckpt_shape");
  const GptConfig saved = ckpt_test_config();
  write_synthetic_checkpoint(dir, saved, {1, 1, 1});
  CheckpointReader reader(dir);
  CHECK_NOTHROW(check_model_matches(reader, saved));

  GptConfig wider = saved;
  wider.d_model = 16;
  std::string e = error_of([&] { check_model_matches(reader, wider); });
  CHECK(e.find(": tensor wte.weight has shape [16, 8] but the recipe's model needs [16, 16]") != std::string::npos);
  CHECK(e.find("(checkpoint: gpt2 n_layer 2, n_head 2, d_model 8, vocab_size 10, seq_len 5; recipe: gpt2 n_layer 2, n_head 2, "
               "d_model 16,") != std::string::npos);

  GptConfig deeper = saved;
  deeper.n_layer = 3;
  e = error_of([&] { check_model_matches(reader, deeper); });
  CHECK(e.find(" has no tensor h.2.ln_1.weight [8] that the recipe's model needs") != std::string::npos);

  GptConfig shallower = saved;
  shallower.n_layer = 1;
  e = error_of([&] { check_model_matches(reader, shallower); });
  CHECK(e.find(" has tensor h.1.ln_1.weight [8] that the recipe's model lacks") != std::string::npos);

  GptConfig vocab = saved;
  vocab.vocab_size = 12;  // same padded table
  e = error_of([&] { check_model_matches(reader, vocab); });
  CHECK(e.find("differs from the recipe's in model.vocab_size") != std::string::npos);

  GptConfig heads = saved;
  heads.n_head = 4;  // same tensor shapes, another model
  e = error_of([&] { check_model_matches(reader, heads); });
  CHECK(e.find("differs from the recipe's in model.n_head") != std::string::npos);
}

}  // namespace
}  // namespace trainer::testing
