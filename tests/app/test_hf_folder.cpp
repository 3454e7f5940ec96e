// Hugging Face model folders: a checkpoint exported as an HF folder (single file and sharded,
// gpt2 and llama tied and untied) imports through model.init_from with every weight equal to
// the checkpoint's bit for bit (F32 both ways, padding rows zero); config.json round-trips
// the shape; a folder whose shape differs lists every mismatch, and missing, extra and
// misshapen tensors are named; a tied model's repeated lm_head.weight loads when it equals the
// token table and is an error naming it and the first element that differs otherwise; bf16
// and fp16 decode exactly.
#include <doctest/doctest.h>
#include <mpi.h>

#include <filesystem>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "app/checkpoint/checkpoint_export.h"
#include "app/engine/trainer.h"
#include "app/hf/hf_folder.h"
#include "app/hf/safetensors_file.h"
#include "kernels/base/errors.h"
#include "parallel/mpi_comm.h"
#include "tests/app/test_checkpoint_util.h"
#include "tests/app/torch_parity_util.h"
#include "tests/support/ensure_mpi.h"

namespace trainer::testing {
namespace {

namespace fs = std::filesystem;

GptConfig llama_config(TiedEmbeddings tie) {
  GptConfig c = gpt_config(2, 4, 16, 10, 16, 8);
  c.arch = llama_family().arch;
  c.n_kv_head = 2;
  c.ffn_dim = 24;
  c.norm_eps = 1e-6f;
  c.rope_theta = 500.0f;
  c.tie = tie;
  return c;
}

Recipe recipe_for(const GptConfig& c, const std::string& init_from) {
  Recipe r;
  r.path = "<hf test>";
  r.model.arch = c.arch;
  r.model.n_layer = c.n_layer;
  r.model.n_head = c.n_head;
  r.model.d_model = c.d_model;
  r.model.vocab_size = c.vocab_size;
  r.model.vocab_multiple = c.padded_vocab;
  r.model.seq_len = c.max_seq_len;
  r.model.init_from = init_from;
  if (c.arch == llama_family().arch) {
    r.model.n_kv_head = c.n_kv_head;
    r.model.ffn_dim = c.ffn_dim;
    r.model.norm_eps = c.norm_eps;
    r.model.rope_theta = c.rope_theta;
    r.model.tie_embeddings = c.tied();
  }
  r.train.device = DeviceChoice::cpu;
  r.train.precision = PrecisionChoice::fp32;
  r.train.micro_batch = 1;
  r.train.seq_len = c.max_seq_len;
  r.train.global_batch = 1;
  r.data.tokenizer = "byte";
  r.eval.every = 0;
  return r;
}

// A synthetic checkpoint of `config` exported as an HF folder; returns the folder.
std::string export_folder(const std::string& name, const GptConfig& config, int64_t max_shard_bytes) {
  const std::string dir = scratch_dir(name);
  fs::create_directories(dir + "/ckpt");
  CkptManifest m = write_synthetic_checkpoint(dir + "/ckpt", config, {1, 2, 1});
  // The byte tokenizer: no tokenizer files to find.
  m.recipe_yaml = "data: {tokenizer: byte}\n";
  write_text_file(dir + "/ckpt/manifest.yaml", manifest_to_yaml(m));
  CheckpointReader reader(dir + "/ckpt");
  export_checkpoint(reader, ExportFormat::hf, dir + "/hf", max_shard_bytes);
  return dir + "/hf";
}

void check_import_equals_checkpoint(const GptConfig& config, const std::string& folder) {
  ensure_mpi();
  MpiComm world(MPI_COMM_SELF, "self", 120);
  Trainer trainer(recipe_for(config, folder), world, 0, DataNeed::none);
  const Weights w = gather_weights(trainer);
  for (const ParamSpec& spec : param_table(config)) {
    const std::vector<float>& got = w.at(spec.name);
    const bool vocab = spec.name == embedding_name(config) || spec.name == "lm_head.weight";
    const int64_t real = vocab ? int64_t(config.vocab_size) * spec.shape[1] : spec.numel();
    int64_t differ = 0;
    for (int64_t i = 0; i < spec.numel(); ++i) {
      const float want = i < real ? ckpt_pattern(spec.name, OptimizerState::master, i) : 0.0f;
      differ += std::memcmp(&got[size_t(i)], &want, 4) != 0;
    }
    CHECK_MESSAGE(differ == 0, spec.name);
  }
}

TEST_CASE("hf folder: gpt2 export then import gives the checkpoint's weights bit for bit") {
  const GptConfig config = tiny_gpt_config();
  const std::string folder = export_folder("hf_gpt2", config, kDefaultMaxShardBytes);
  CHECK(fs::exists(folder + "/model.safetensors"));
  CHECK(!fs::exists(folder + "/model.safetensors.index.json"));
  const GptConfig back = gpt_config_from_hf(folder);
  CHECK(back.n_layer == config.n_layer);
  CHECK(back.d_model == config.d_model);
  CHECK(back.vocab_size == config.vocab_size);
  CHECK(back.max_seq_len == config.max_seq_len);
  // Conv1D weights are (in, out) in the folder.
  const SafetensorsSet set(folder);
  CHECK(set.find("h.0.attn.c_attn.weight")->shape == std::vector<int64_t>{8, 24});
  CHECK(set.find("wte.weight")->shape == std::vector<int64_t>{10, 8});
  check_import_equals_checkpoint(config, folder);
}

TEST_CASE("hf folder: llama tied and untied, sharded, import gives the checkpoint's weights bit for bit") {
  for (TiedEmbeddings tie : {TiedEmbeddings::tied, TiedEmbeddings::untied}) {
    const GptConfig config = llama_config(tie);
    const std::string folder =
        export_folder(tie == TiedEmbeddings::tied ? "hf_llama_tied" : "hf_llama_untied", config, 1000);
    CHECK(fs::exists(folder + "/model.safetensors.index.json"));
    int shards = 0;
    for (const auto& e : fs::directory_iterator(folder))
      shards += e.path().extension() == ".safetensors" && e.path().filename().string().rfind("model-", 0) == 0;
    CHECK(shards > 1);
    const GptConfig back = gpt_config_from_hf(folder);
    CHECK(back.kv_heads() == 2);
    CHECK(back.ffn_dim == 24);
    CHECK(back.tied() == config.tied());
    CHECK(back.rope_theta == 500.0f);
    CHECK(back.norm_eps == 1e-6f);
    check_import_equals_checkpoint(config, folder);
  }
}

TEST_CASE("hf folder: every shape mismatch is listed, exit code 2") {
  const GptConfig config = llama_config(TiedEmbeddings::untied);
  const std::string folder = export_folder("hf_mismatch", config, kDefaultMaxShardBytes);
  GptConfig recipe = config;
  recipe.n_layer = 3;
  recipe.ffn_dim = 32;
  const std::string e = error_of([&] { check_hf_config("r.yaml", folder, gpt_config_from_hf(folder), recipe); });
  CHECK(e.find("model.n_layer: folder 2, recipe 3") != std::string::npos);
  CHECK(e.find("model.ffn_dim: folder 24, recipe 32") != std::string::npos);
}

// Rewrites model.safetensors with one tensor renamed (as an extra and a missing one) or reshaped.
void edit_header(const std::string& folder, const std::string& from, const std::string& to) {
  std::vector<char> bytes = read_bytes_file(folder + "/model.safetensors");
  std::string all(bytes.begin(), bytes.end());
  const size_t at = all.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(from.size() == to.size());
  all.replace(at, from.size(), to);
  write_bytes_file(folder + "/model.safetensors", std::vector<char>(all.begin(), all.end()));
}

TEST_CASE("hf folder: missing, extra and misshapen tensors are named") {
  const GptConfig config = llama_config(TiedEmbeddings::untied);
  {
    const std::string folder = export_folder("hf_missing", config, kDefaultMaxShardBytes);
    edit_header(folder, "\"model.norm.weight\"", "\"model.nrm_.weight\"");
    const std::string e = error_of([&] { check_hf_tensors(folder, SafetensorsSet(folder), config); });
    CHECK(e.find("missing tensor model.norm.weight [16]") != std::string::npos);
    CHECK(e.find("extra tensor model.nrm_.weight") != std::string::npos);
  }
  {
    const std::string folder = export_folder("hf_misshapen", config, kDefaultMaxShardBytes);
    // gate and up are both (24, 16): swapping a shape's numbers keeps the byte count.
    edit_header(folder, "layers.0.mlp.up_proj.weight\":{\"dtype\":\"F32\",\"shape\":[24,16]",
                "layers.0.mlp.up_proj.weight\":{\"dtype\":\"F32\",\"shape\":[16,24]");
    const std::string e = error_of([&] { check_hf_tensors(folder, SafetensorsSet(folder), config); });
    CHECK(e.find("tensor model.layers.0.mlp.up_proj.weight has shape [16, 24], expected [24, 16]") !=
          std::string::npos);
  }
}

// [begin, end) of tensor `name` in a single-file folder's bytes (data_offsets + the header).
std::pair<size_t, size_t> tensor_bytes(const std::vector<char>& file, const std::string& name) {
  uint64_t header = 0;
  for (int i = 0; i < 8; ++i) header |= uint64_t(static_cast<unsigned char>(file[size_t(i)])) << (8 * i);
  const std::string text(file.begin() + 8, file.begin() + 8 + std::ptrdiff_t(header));
  const size_t at = text.find("data_offsets\":[", text.find("\"" + name + "\""));
  REQUIRE(at != std::string::npos);
  long long begin = 0, end = 0;
  REQUIRE(std::sscanf(text.c_str() + at + 15, "%lld,%lld", &begin, &end) == 2);
  return {size_t(8 + header + uint64_t(begin)), size_t(8 + header + uint64_t(end))};
}

TEST_CASE("hf folder: a tied model's lm_head.weight must equal the token table") {
  // An untied export holds both tensors, with different values; its config.json then says tied.
  const std::string folder = export_folder("hf_tied_head", llama_config(TiedEmbeddings::untied), kDefaultMaxShardBytes);
  const std::string config_path = folder + "/config.json";
  std::string config_text = read_text_file(config_path);
  const std::string untied = "\"tie_word_embeddings\": false";
  REQUIRE(config_text.find(untied) != std::string::npos);
  config_text.replace(config_text.find(untied), untied.size(), "\"tie_word_embeddings\": true");
  write_text_file(config_path, config_text);
  const GptConfig tied = llama_config(TiedEmbeddings::tied);
  ensure_mpi();
  MpiComm world(MPI_COMM_SELF, "self", 120);
  const std::string e = error_of([&] { Trainer t(recipe_for(tied, folder), world, 0, DataNeed::none); });
  CHECK(e.find("tensor lm_head.weight (in " + folder + "/model.safetensors) differs from model.embed_tokens.weight at [0, 0]") !=
        std::string::npos);
  CHECK(e.find("ties the head to the token table") != std::string::npos);

  // The head's bytes made the table's: it loads, and the model holds the table.
  std::vector<char> bytes = read_bytes_file(folder + "/model.safetensors");
  const auto [head_begin, head_end] = tensor_bytes(bytes, "lm_head.weight");
  const auto [table_begin, table_end] = tensor_bytes(bytes, "model.embed_tokens.weight");
  REQUIRE(head_end - head_begin == table_end - table_begin);
  std::copy(bytes.begin() + std::ptrdiff_t(table_begin), bytes.begin() + std::ptrdiff_t(table_end),
            bytes.begin() + std::ptrdiff_t(head_begin));
  write_bytes_file(folder + "/model.safetensors", bytes);
  check_import_equals_checkpoint(tied, folder);

  // One element off, the last: named by its row and column.
  bytes[head_end - 1] ^= 0x01;
  write_bytes_file(folder + "/model.safetensors", bytes);
  const std::string last = error_of([&] { Trainer t(recipe_for(tied, folder), world, 0, DataNeed::none); });
  CHECK(last.find("differs from model.embed_tokens.weight at [9, 15]") != std::string::npos);
}

TEST_CASE("hf folder: bf16 and fp16 decode exactly") {
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0xc040) == -3.0f);
  CHECK(f16_to_f32(0x3c00) == 1.0f);
  CHECK(f16_to_f32(0xc000) == -2.0f);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16_to_f32(0x7bff) == 65504.0f);
  CHECK(std::isinf(f16_to_f32(0x7c00)));
}

TEST_CASE("hf folder: a NaN or inf weight is refused naming the tensor and element, as in an llm.c file") {
  ensure_mpi();
  MpiComm world(MPI_COMM_SELF, "self", 120);
  const GptConfig config = tiny_gpt_config();
  const std::pair<uint32_t, const char*> cases[] = {{0x7fc00000u, "nan"}, {0xff800000u, "inf"}};
  for (const auto& [bits, word] : cases) {
    CAPTURE(word);
    const std::string folder = export_folder(std::string("hf_nonfinite_") + word, config, kDefaultMaxShardBytes);
    // The folder's F32 data section starts after the 8-byte length and the header; its third
    // float is element 2 of the tensor stored first.
    const std::string file = folder + "/model.safetensors";
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    uint64_t header = 0;
    f.read(reinterpret_cast<char*>(&header), 8);
    f.seekp(std::streamoff(8 + header + 2 * 4));
    f.write(reinterpret_cast<const char*>(&bits), 4);
    f.close();
    std::string first;
    const char* first_at = nullptr;
    const SafetensorsSet set(folder);
    for (const auto& [key, t] : set.tensors())
      if (!first_at || t.data < first_at) first = key, first_at = t.data;
    const std::string says = "Hugging Face folder '" + folder + "': tensor " + first + " element 2 is " + word +
                             "; model.init_from needs finite weights";
    CHECK_THROWS_WITH_AS(Trainer(recipe_for(config, folder), world, 0, DataNeed::none), doctest::Contains(says.c_str()),
                         InputError);
  }
}

TEST_CASE("hf folder: a key given twice in config.json or the shard index is refused, naming it") {
  const std::string dir = scratch_dir("hf_duplicate_keys");
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  };
  write("config.json", "{\"model_type\": \"gpt2\",\n \"n_layer\": 2,\n \"n_layer\": 12}\n");
  CHECK_THROWS_WITH_AS(gpt_config_from_hf(dir),
                       doctest::Contains("config.json:3:2: duplicate key \"n_layer\" (first at line 2, column 2)"),
                       InputError);
  // The index: one tensor mapped to two shards would load whichever came last.
  write("model.safetensors.index.json",
        "{\"weight_map\": {\"wte.weight\": \"a.safetensors\",\n \"wte.weight\": \"b.safetensors\"}}\n");
  CHECK_THROWS_WITH_AS(SafetensorsSet{dir},
                       doctest::Contains("model.safetensors.index.json:2:2: duplicate key \"wte.weight\" (first at "
                                         "line 1, column 17)"),
                       InputError);
}

}  // namespace
}  // namespace trainer::testing
