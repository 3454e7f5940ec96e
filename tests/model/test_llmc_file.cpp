// llm.c model files: write then read gives the same tensors at llm.c's byte positions; every
// kind of bad file is an InputError naming the file; a config mismatch names the recipe key.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "kernels/base/errors.h"
#include "model/llmc_file.h"
#include "model/param_table.h"
#include "tests/support/test_util.h"
#include "tests/support/tiny_gpt.h"

namespace trainer::testing {
namespace {

GptConfig small_config() { return tiny_gpt_config(); }

// Distinct values per tensor and element, so a tensor read from the wrong place shows.
std::vector<float> pattern(const std::string& name, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  const float base = float(std::hash<std::string>{}(name) % 1000);
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = base + 0.001f * float(i);
  return v;
}

std::map<std::string, std::vector<float>> pattern_model(const GptConfig& c) {
  std::map<std::string, std::vector<float>> m;
  for (const ParamSpec& s : param_table(c)) m[s.name] = pattern(s.name, s.numel());
  return m;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

float float_at(const std::vector<char>& bytes, int64_t float_index) {
  float v;
  std::memcpy(&v, bytes.data() + 1024 + float_index * 4, 4);
  return v;
}

// The InputError message of opening `path`, or "" when it opens.
std::string open_error(const std::string& path) {
  try {
    LlmcModelFile f(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("llmc file: write then read round-trips every tensor at llm.c's positions") {
  const std::string dir = scratch_dir("llmc_roundtrip");
  const std::string path = dir + "/model.bin";
  const GptConfig c = small_config();
  auto tensors = pattern_model(c);
  std::vector<std::string> order;
  write_llmc_model(path, c, [&](const std::string& name) {
    order.push_back(name);
    return tensors.at(name);
  });
  for (const auto& e : std::filesystem::directory_iterator(dir)) CHECK(e.path().filename() == "model.bin");

  // Tensor-major order: all ln_1.weight, then all ln_1.bias, ..., as llm.c writes them.
  REQUIRE(order.size() == tensors.size());
  CHECK(order[0] == "wte.weight");
  CHECK(order[1] == "wpe.weight");
  CHECK(order[2] == "h.0.ln_1.weight");
  CHECK(order[3] == "h.1.ln_1.weight");
  CHECK(order[4] == "h.0.ln_1.bias");
  CHECK(order.back() == "ln_f.bias");

  const std::vector<char> bytes = read_bytes(path);
  REQUIRE(int64_t(bytes.size()) == 1024 + 4 * c.num_params());
  int32_t header[8];
  std::memcpy(header, bytes.data(), sizeof(header));
  CHECK(header[0] == 20240326);
  CHECK(header[1] == 3);
  CHECK(header[2] == c.max_seq_len);
  CHECK(header[3] == c.vocab_size);
  CHECK(header[4] == c.n_layer);
  CHECK(header[5] == c.n_head);
  CHECK(header[6] == c.d_model);
  CHECK(header[7] == c.padded_vocab);
  // h.1.ln_1.weight sits right after h.0.ln_1.weight, which follows wte (Vp, C) and wpe (maxT, C).
  const int64_t C = c.d_model, ln1 = int64_t(c.padded_vocab) * C + int64_t(c.max_seq_len) * C;
  CHECK(float_at(bytes, ln1) == tensors["h.0.ln_1.weight"][0]);
  CHECK(float_at(bytes, ln1 + C) == tensors["h.1.ln_1.weight"][0]);
  CHECK(float_at(bytes, ln1 + 2 * C + 3) == tensors["h.0.ln_1.bias"][3]);
  const int64_t last = c.num_params() - 1;
  CHECK(float_at(bytes, last) == tensors["ln_f.bias"][size_t(C - 1)]);

  LlmcModel m = read_llmc_model(path);
  CHECK(m.config.n_layer == c.n_layer);
  CHECK(m.config.n_head == c.n_head);
  CHECK(m.config.d_model == c.d_model);
  CHECK(m.config.vocab_size == c.vocab_size);
  CHECK(m.config.padded_vocab == c.padded_vocab);
  CHECK(m.config.max_seq_len == c.max_seq_len);
  REQUIRE(m.tensors.size() == tensors.size());
  for (const auto& entry : tensors) {
    const auto& name = entry.first;  // no structured binding: clang 14 cannot capture one
    const auto& values = entry.second;
    CHECK_MESSAGE(m.tensors.at(name) == values, name);
  }

  // A slice reads exactly those global elements (what a tensor-parallel rank asks for).
  LlmcModelFile f(path);
  std::vector<float> slice(5);
  f.read("h.1.mlp.c_fc.weight", {17, 22}, slice.data());
  const auto& fc = tensors["h.1.mlp.c_fc.weight"];
  CHECK(slice == std::vector<float>(fc.begin() + 17, fc.begin() + 22));
}

TEST_CASE("llmc file: a failed write leaves no file behind") {
  const std::string dir = scratch_dir("llmc_failed_write");
  const std::string path = dir + "/model.bin";
  const GptConfig c = small_config();
  auto tensors = pattern_model(c);
  CHECK_THROWS_AS(write_llmc_model(path, c,
                                   [&](const std::string& name) {
                                     auto v = tensors.at(name);
                                     if (name == "h.1.ln_2.bias") v.pop_back();
                                     return v;
                                   }),
                  std::logic_error);
  CHECK(std::filesystem::is_empty(dir));
  // A parent that cannot be made a folder (missing ones are created: output_target.h).
  std::ofstream(dir + "/file") << "in the way";
  CHECK_THROWS_AS(write_llmc_model(dir + "/file/sub/model.bin", c,
                                   [&](const std::string& name) { return tensors.at(name); }),
                  InputError);
}

TEST_CASE("llmc file: bad files are InputErrors naming the file") {
  const std::string dir = scratch_dir("llmc_bad");
  const std::string good = dir + "/good.bin";
  const GptConfig c = small_config();
  auto tensors = pattern_model(c);
  write_llmc_model(good, c, [&](const std::string& name) { return tensors.at(name); });
  const std::vector<char> bytes = read_bytes(good);
  auto variant = [&](const std::string& name, auto&& edit) {
    std::vector<char> b = bytes;
    edit(b);
    const std::string p = dir + "/" + name;
    write_bytes(p, b);
    return p;
  };
  auto set_int = [](std::vector<char>& b, int slot, int32_t v) { std::memcpy(b.data() + 4 * slot, &v, 4); };

  std::string e = open_error(dir + "/missing.bin");
  CHECK(e.find(dir + "/missing.bin") != std::string::npos);

  std::string p = variant("magic.bin", [&](std::vector<char>& b) { set_int(b, 0, 20240520); });
  e = open_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("magic 20240520") != std::string::npos);
  CHECK(e.find("20240326") != std::string::npos);

  p = variant("bf16.bin", [&](std::vector<char>& b) { set_int(b, 1, 5); });
  e = open_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("version 5") != std::string::npos);
  CHECK(e.find("bf16") != std::string::npos);
  CHECK(e.find("valid: 3") != std::string::npos);

  p = variant("truncated.bin", [&](std::vector<char>& b) { b.resize(b.size() - 4); });
  e = open_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("truncated") != std::string::npos);
  CHECK(e.find(std::to_string(bytes.size())) != std::string::npos);

  p = variant("header_only.bin", [&](std::vector<char>& b) { b.resize(100); });
  e = open_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("truncated") != std::string::npos);

  p = variant("trailing.bin", [&](std::vector<char>& b) { b.resize(b.size() + 8); });
  e = open_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("trailing") != std::string::npos);

  // A header that no longer matches the size: n_layer 3 needs more bytes than there are.
  p = variant("layers.bin", [&](std::vector<char>& b) { set_int(b, 4, 3); });
  e = open_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("n_layer 3") != std::string::npos);

  p = variant("zero_head.bin", [&](std::vector<char>& b) { set_int(b, 5, 0); });
  e = open_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("n_head is 0") != std::string::npos);

  p = variant("head_split.bin", [&](std::vector<char>& b) { set_int(b, 5, 3); });
  e = open_error(p);
  CHECK(e.find("not a multiple of n_head 3") != std::string::npos);

  p = variant("padded.bin", [&](std::vector<char>& b) { set_int(b, 7, 8); });
  e = open_error(p);
  CHECK(e.find("padded_vocab 8") != std::string::npos);
}

// Found by fuzz_llmc_header: a 100 MB file of a million 1-wide layers took minutes and
// gigabytes (a map entry per tensor) before any check refused it.
TEST_CASE("llmc file: a header with more layers than the limit is refused before the tensor table") {
  int32_t header[kLlmcHeaderInts] = {kLlmcModelMagic, kLlmcModelVersionF32, 1, 1, 1000000, 1, 1, 1};
  GptConfig c;
  c.max_seq_len = c.vocab_size = c.padded_vocab = c.n_head = c.d_model = 1;
  c.n_layer = 1000000;
  const int64_t size = 1024 + 4 * c.num_params();
  CHECK_THROWS_WITH_AS(llmc_config_from_header("many.bin", header, size),
                       doctest::Contains("'many.bin': header field n_layer is 1000000; valid: 1 to 4096"),
                       InputError);
  header[4] = kLlmcMaxLayers;
  c.n_layer = kLlmcMaxLayers;
  CHECK(llmc_config_from_header("most.bin", header, 1024 + 4 * c.num_params()).n_layer == kLlmcMaxLayers);
}

TEST_CASE("llmc file: a config mismatch names the recipe key and both values") {
  const GptConfig file = small_config();
  CHECK_NOTHROW(check_llmc_config("r.yaml", "m.bin", file, file));
  auto mismatch = [&](auto&& edit) {
    GptConfig recipe = file;
    edit(recipe);
    try {
      check_llmc_config("r.yaml", "m.bin", file, recipe);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = mismatch([](GptConfig& r) { r.n_layer = 4; });
  CHECK(e.find("r.yaml") != std::string::npos);
  CHECK(e.find("m.bin") != std::string::npos);
  CHECK(e.find("n_layer 2") != std::string::npos);
  CHECK(e.find("has 4 (model.n_layer)") != std::string::npos);
  e = mismatch([](GptConfig& r) { r.max_seq_len = 1024; });
  CHECK(e.find("max_seq_len 5") != std::string::npos);
  CHECK(e.find("1024 (model.seq_len)") != std::string::npos);
  e = mismatch([](GptConfig& r) { r.padded_vocab = 64; });
  CHECK(e.find("padded_vocab 16") != std::string::npos);
  CHECK(e.find("model.vocab_multiple") != std::string::npos);
  // The first differing field is reported.
  e = mismatch([](GptConfig& r) {
    r.d_model = 16;
    r.vocab_size = 12;
  });
  CHECK(e.find("d_model 8") != std::string::npos);
}


TEST_CASE("llmc file: a NaN or an infinity is refused naming the file, the tensor and the first bad element") {
  const std::string dir = scratch_dir("llmc_non_finite");
  const GptConfig c = small_config();
  auto tensors = pattern_model(c);
  const std::string good = dir + "/good.bin";
  write_llmc_model(good, c, [&](const std::string& name) { return tensors.at(name); });
  LlmcModelFile(good).check_finite();
  const std::map<std::string, int64_t> offsets = llmc_tensor_offsets(c);
  struct Row {
    const char* tensor;
    int64_t element;
    float value;
    const char* is;
  };
  const Row rows[] = {
      {"wte.weight", 0, NAN, "nan"},
      {"wpe.weight", 7, INFINITY, "inf"},
      {"h.1.attn.c_attn.weight", 100, -INFINITY, "inf"},
      {"ln_f.bias", int64_t(c.d_model) - 1, NAN, "nan"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.tensor);
    std::vector<char> bytes = read_bytes(good);
    const int64_t at = offsets.at(row.tensor) + row.element;
    std::memcpy(bytes.data() + 1024 + at * 4, &row.value, 4);
    // A second bad value later in the same tensor (where there is room): the first one is named.
    if (std::string(row.tensor) != "ln_f.bias") std::memcpy(bytes.data() + 1024 + (at + 1) * 4, &row.value, 4);
    const std::string path = dir + "/" + row.tensor + ".bin";
    write_bytes(path, bytes);
    CHECK_THROWS_WITH_AS(LlmcModelFile(path).check_finite(),
                         ("llm.c model file '" + path + "': tensor " + row.tensor + " element " +
                          std::to_string(row.element) + " is " + row.is +
                          "; model.init_from needs finite weights (valid: every value a finite fp32 number)")
                             .c_str(),
                         InputError);
  }
}

}  // namespace trainer::testing
