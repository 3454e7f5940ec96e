// Checkpoint export: the safetensors header parses back (with yaml-cpp's JSON reading, not the
// writer's code) with every HF GPT-2 tensor present, F32, the right shape and contiguous
// offsets that cover the data exactly; the values are the master weights, Conv1D weights
// transposed and the vocabulary padding dropped; the llm.c export reads back equal; a
// corrupted checkpoint exports nothing.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "app/checkpoint/checkpoint_export.h"
#include "kernels/base/errors.h"
#include "model/llmc_file.h"
#include "tests/app/test_checkpoint_util.h"

namespace trainer::testing {
namespace {

namespace fs = std::filesystem;

// What transformers' GPT2LMHeadModel expects for this config, written out by hand.
std::map<std::string, std::vector<int64_t>> hf_gpt2_shapes(const GptConfig& c) {
  const int64_t C = c.d_model;
  std::map<std::string, std::vector<int64_t>> s;
  s["wte.weight"] = {c.vocab_size, C};
  s["wpe.weight"] = {c.max_seq_len, C};
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    s[h + "ln_1.weight"] = s[h + "ln_1.bias"] = s[h + "ln_2.weight"] = s[h + "ln_2.bias"] = {C};
    s[h + "attn.c_attn.weight"] = {C, 3 * C};
    s[h + "attn.c_attn.bias"] = {3 * C};
    s[h + "attn.c_proj.weight"] = {C, C};
    s[h + "attn.c_proj.bias"] = {C};
    s[h + "mlp.c_fc.weight"] = {C, 4 * C};
    s[h + "mlp.c_fc.bias"] = {4 * C};
    s[h + "mlp.c_proj.weight"] = {4 * C, C};
    s[h + "mlp.c_proj.bias"] = {C};
  }
  s["ln_f.weight"] = s["ln_f.bias"] = {C};
  return s;
}

struct ParsedTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
};

struct ParsedSafetensors {
  uint64_t header_bytes = 0;
  std::string header;
  YAML::Node metadata;
  std::map<std::string, ParsedTensor> tensors;
};

ParsedSafetensors parse_safetensors_header(const std::vector<char>& file) {
  ParsedSafetensors out;
  REQUIRE(file.size() >= 8);
  for (int i = 7; i >= 0; --i) out.header_bytes = (out.header_bytes << 8) | uint8_t(file[size_t(i)]);
  REQUIRE(8 + out.header_bytes <= file.size());
  out.header.assign(file.data() + 8, size_t(out.header_bytes));
  const YAML::Node root = YAML::Load(out.header);
  REQUIRE(root.IsMap());
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key == "__metadata__") {
      out.metadata = kv.second;
      continue;
    }
    ParsedTensor t;
    t.dtype = kv.second["dtype"].as<std::string>();
    t.shape = kv.second["shape"].as<std::vector<int64_t>>();
    const auto offsets = kv.second["data_offsets"].as<std::vector<int64_t>>();
    REQUIRE(offsets.size() == 2);
    t.begin = offsets[0];
    t.end = offsets[1];
    out.tensors[key] = t;
  }
  return out;
}

// Checks the header against the HF shapes and returns the size of the data section.
int64_t check_header(const ParsedSafetensors& p, const GptConfig& config) {
  CHECK((8 + p.header_bytes) % 8 == 0);
  CHECK(p.header.find_last_not_of(' ') == p.header.rfind('}'));  // padded with spaces only
  REQUIRE(p.metadata.IsMap());
  CHECK(p.metadata.size() == 1);
  CHECK(p.metadata["format"].as<std::string>() == "pt");
  const auto want = hf_gpt2_shapes(config);
  CHECK(p.tensors.size() == want.size());
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const auto& entry : want) {
    const auto& key = entry.first;  // no structured binding: clang 14 cannot capture one
    const auto& shape = entry.second;
    CAPTURE(key);
    auto it = p.tensors.find(key);
    REQUIRE(it != p.tensors.end());
    CHECK(it->second.dtype == "F32");
    CHECK(it->second.shape == shape);
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    CHECK(it->second.end - it->second.begin == numel * 4);
    spans.push_back({it->second.begin, it->second.end});
  }
  std::sort(spans.begin(), spans.end());
  int64_t at = 0;
  for (const auto& [b, e] : spans) {
    CHECK(b == at);  // contiguous, no overlap, no hole
    at = e;
  }
  return at;
}

TEST_CASE("checkpoint export: the safetensors header follows HF GPT-2 names, shapes and offsets") {
  const GptConfig config = ckpt_test_config();
  const std::vector<HfTensor> tensors = hf_tensors(config);
  CHECK(tensors.size() == param_table(config).size());
  const std::string header = safetensors_header(tensors);
  CHECK((8 + header.size()) % 8 == 0);
  std::vector<char> file(8 + header.size());
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
  std::memcpy(file.data() + 8, header.data(), header.size());
  const ParsedSafetensors parsed = parse_safetensors_header(file);
  int64_t bytes = 0;
  for (const HfTensor& t : tensors) {
    int64_t n = 4;
    for (int64_t d : t.hf_shape) n *= d;
    bytes += n;
  }
  CHECK(check_header(parsed, config) == bytes);
}

TEST_CASE("checkpoint export: safetensors holds the master weights, Conv1D transposed, padding rows dropped") {
  const GptConfig config = ckpt_test_config();
  const std::string dir = scratch_dir("ckpt_export_st");
  fs::create_directories(dir + "/ckpt");
  write_synthetic_checkpoint(dir + "/ckpt", config, {2, 2, 2});
  CheckpointReader reader(dir + "/ckpt");
  const std::string out = dir + "/model.safetensors";
  export_checkpoint(reader, ExportFormat::safetensors, out);
  const std::vector<char> file = read_bytes_file(out);
  const ParsedSafetensors parsed = parse_safetensors_header(file);
  const int64_t data_bytes = check_header(parsed, config);
  CHECK(int64_t(file.size()) == int64_t(8 + parsed.header_bytes) + data_bytes);
  const char* data = file.data() + 8 + parsed.header_bytes;
  auto value = [&](const std::string& key, int64_t i) {
    float v;
    std::memcpy(&v, data + parsed.tensors.at(key).begin + 4 * i, 4);
    return v;
  };
  const int64_t C = config.d_model;
  for (const auto& entry : parsed.tensors) {
    const auto& key = entry.first;  // no structured binding: clang 14 cannot capture one
    const auto& t = entry.second;
    CAPTURE(key);
    const bool conv1d = key.find("c_attn.weight") != std::string::npos ||
                        key.find("c_proj.weight") != std::string::npos || key.find("c_fc.weight") != std::string::npos;
    int64_t wrong = 0;
    if (conv1d) {
      // HF (in, out)[i][o] is our (out, in)[o][i].
      const int64_t in = t.shape[0], outs = t.shape[1];
      for (int64_t i = 0; i < in; ++i)
        for (int64_t o = 0; o < outs; ++o)
          wrong += value(key, i * outs + o) != ckpt_pattern(key, OptimizerState::master, o * in + i);
    } else {
      const int64_t n = (t.end - t.begin) / 4;
      for (int64_t i = 0; i < n; ++i) wrong += value(key, i) != ckpt_pattern(key, OptimizerState::master, i);
    }
    CHECK(wrong == 0);
  }
  // Spot values: the query/key/value columns of c_attn, and the last real vocabulary row.
  CHECK(value("h.1.attn.c_attn.weight", 0 * 3 * C + 2 * C) ==
        ckpt_pattern("h.1.attn.c_attn.weight", OptimizerState::master, 2 * C * C));
  CHECK(value("wte.weight", (config.vocab_size - 1) * C) ==
        ckpt_pattern("wte.weight", OptimizerState::master, (config.vocab_size - 1) * C));
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
}

TEST_CASE("checkpoint export: the llm.c model file reads back equal to the master weights") {
  const GptConfig config = ckpt_test_config();
  const std::string dir = scratch_dir("ckpt_export_llmc");
  fs::create_directories(dir + "/ckpt");
  write_synthetic_checkpoint(dir + "/ckpt", config, {1, 2, 2});
  CheckpointReader reader(dir + "/ckpt");
  export_checkpoint(reader, ExportFormat::llmc, dir + "/model.bin");
  const LlmcModel model = read_llmc_model(dir + "/model.bin");
  CHECK(model.config.n_layer == config.n_layer);
  CHECK(model.config.n_head == config.n_head);
  CHECK(model.config.d_model == config.d_model);
  CHECK(model.config.vocab_size == config.vocab_size);
  CHECK(model.config.padded_vocab == config.padded_vocab);
  CHECK(model.config.max_seq_len == config.max_seq_len);
  CHECK(model.tensors.size() == param_table(config).size());
  for (const ParamSpec& s : param_table(config)) {
    CAPTURE(s.name);
    REQUIRE(model.tensors.count(s.name) == 1);
    CHECK(model.tensors.at(s.name) == reader.read_full(s.name, OptimizerState::master));
  }
}

TEST_CASE("checkpoint export of a corrupted checkpoint fails naming the file and writes nothing") {
  const GptConfig config = ckpt_test_config();
  const std::string dir = scratch_dir("ckpt_export_bad");
  fs::create_directories(dir + "/ckpt");
  write_synthetic_checkpoint(dir + "/ckpt", config, {1, 2, 1});
  std::vector<char> bytes = read_bytes_file(dir + "/ckpt/rank_00001.bin");
  bytes[12] = char(~bytes[12]);
  write_bytes_file(dir + "/ckpt/rank_00001.bin", bytes);
  for (ExportFormat f : {ExportFormat::llmc, ExportFormat::safetensors}) {
    CheckpointReader reader(dir + "/ckpt");
    std::string error;
    try {
      export_checkpoint(reader, f, dir + "/out");
    } catch (const InputError& e) {
      error = e.what();
    }
    CHECK(error.find("rank_00001.bin: checksum mismatch") != std::string::npos);
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
    CHECK(files == 0);  // neither the output nor a temporary file
  }
}

}  // namespace
}  // namespace trainer::testing
