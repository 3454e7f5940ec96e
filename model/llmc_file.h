// llm.c model files (the `.bin` that llm.c's train_gpt2 reads and writes), version 3 only:
//   header: 256 x int32 (1024 bytes), little-endian: [0] magic 20240326, [1] version 3 (fp32,
//           padded vocabulary), [2] max_seq_len, [3] vocab_size, [4] n_layer, [5] n_head,
//           [6] d_model, [7] padded_vocab; the other slots 0.
//   body:   fp32 tensors in nn.Linear layout (out, in), tensor-major: every layer's ln_1.weight,
//           then every layer's ln_1.bias, and so on, in llm.c's order wte, wpe, ln1w, ln1b, qkvw,
//           qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, lnfw, lnfb.
//   file size == 1024 + 4 x GptConfig::num_params(), exactly.
// Tensors are addressed by our global names (HF GPT-2 naming: wte.weight, h.3.attn.c_attn.weight),
// whose global shapes are the ones llm.c stores, so a slice of a tensor is a slice of the file.
// Version 5 (bf16) is rejected with a message saying so; llm.c can convert between the two.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/base/range.h"
#include "model/gpt_config.h"

namespace trainer {

class ParamStore;

constexpr int32_t kLlmcModelMagic = 20240326;
constexpr int32_t kLlmcModelVersionF32 = 3;
constexpr int kLlmcHeaderInts = 256;
// Most layers a header may claim: far above any GPT-2 shape, and the checkpoint manifests' limit.
constexpr int kLlmcMaxLayers = 4096;

// Offset (in floats, from the end of the header) of every tensor of `config` in the file.
std::map<std::string, int64_t> llmc_tensor_offsets(const GptConfig& config);

// The checks LlmcModelFile's constructor makes on a file's header (kLlmcHeaderInts ints) and
// size in bytes: magic, version, a valid model shape, a size that matches it exactly. Throws
// InputError naming `path`.
GptConfig llmc_config_from_header(const std::string& path, const int32_t* header, int64_t file_size);

// An llm.c model file opened for reading: the header and the file size have been checked.
// Reads go straight to the file (pread), so a rank reads only the slices it holds.
class LlmcModelFile {
 public:
  // Throws InputError naming the file: missing or unreadable, wrong magic, unsupported
  // version, a header that describes no valid model, a size that does not match the header.
  explicit LlmcModelFile(const std::string& path);
  ~LlmcModelFile();
  LlmcModelFile(const LlmcModelFile&) = delete;
  LlmcModelFile& operator=(const LlmcModelFile&) = delete;

  const std::string& path() const { return path_; }
  // init_std keeps its default: the file does not record it.
  const GptConfig& config() const { return config_; }
  // Global flat elements [range.begin, range.end) of tensor `name` into out.
  void read(const std::string& name, Range range, float* out) const;
  std::vector<float> read_all(const std::string& name) const;
  // InputError naming the file, the first tensor (in file order) holding a NaN or an infinity,
  // its first such element and which it is; reads the whole file in 1 MiB pieces.
  void check_finite() const;

 private:
  std::string path_;
  int fd_ = -1;
  GptConfig config_;
  std::map<std::string, int64_t> offsets_;
  std::map<std::string, int64_t> sizes_;
};

// A whole model in memory (tests, small models, conversion tools).
struct LlmcModel {
  GptConfig config;
  std::map<std::string, std::vector<float>> tensors;  // by global name, global shape flattened
};
LlmcModel read_llmc_model(const std::string& path);

// Writes a model file for `config`; fetch(name) returns the global tensor `name` (its size is
// checked), called once per tensor in file order so an exporter can stream. Written to a
// temporary file and renamed, so the path never holds a partial file.
using LlmcFetchFn = std::function<std::vector<float>(const std::string& name)>;
void write_llmc_model(const std::string& path, const GptConfig& config, const LlmcFetchFn& fetch);

// Compares the model shape a file holds with the one a recipe asks for; the first field that
// differs is a ConfigError naming the recipe, the file, the recipe key and both values.
void check_llmc_config(const std::string& recipe_path, const std::string& file_path, const GptConfig& file,
                       const GptConfig& recipe);

// model.init_from: checks the file against the store's model and that every weight is finite
// (a NaN or inf would poison the first step), then sets every parameter this rank holds from it.
void load_llmc_into(ParamStore& store, const std::string& file_path, const std::string& recipe_path);

}  // namespace trainer
