// llm.c model files (see llmc_file.h).
#include "model/llmc_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "kernels/base/atomic_file.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/base/regular_file.h"
#include "model/param_store.h"
#include "model/weights_finite.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "llm.c files are little-endian; this reader assumes a little-endian host");

namespace trainer {
namespace {

constexpr int64_t kHeaderBytes = int64_t(kLlmcHeaderInts) * 4;
constexpr int32_t kShardMagic = 20240520;

// One kind of tensor in llm.c's order: a per-layer suffix ("ln_1.weight") or a whole tensor.
struct LlmcKind {
  const char* name;
  bool per_layer;
};
constexpr LlmcKind kKinds[] = {
    {"wte.weight", false},        {"wpe.weight", false},       {"ln_1.weight", true},
    {"ln_1.bias", true},          {"attn.c_attn.weight", true}, {"attn.c_attn.bias", true},
    {"attn.c_proj.weight", true}, {"attn.c_proj.bias", true},  {"ln_2.weight", true},
    {"ln_2.bias", true},          {"mlp.c_fc.weight", true},   {"mlp.c_fc.bias", true},
    {"mlp.c_proj.weight", true},  {"mlp.c_proj.bias", true},   {"ln_f.weight", false},
    {"ln_f.bias", false},
};

std::string layer_name(int layer, const char* suffix) { return "h." + std::to_string(layer) + "." + suffix; }

// Elements of one tensor of each kind (per layer for per-layer kinds).
int64_t kind_numel(const GptConfig& c, const std::string& kind) {
  const int64_t C = c.d_model;
  if (kind == "wte.weight") return int64_t(c.padded_vocab) * C;
  if (kind == "wpe.weight") return int64_t(c.max_seq_len) * C;
  if (kind == "attn.c_attn.weight") return 3 * C * C;
  if (kind == "attn.c_attn.bias") return 3 * C;
  if (kind == "attn.c_proj.weight") return C * C;
  if (kind == "mlp.c_fc.weight" || kind == "mlp.c_proj.weight") return 4 * C * C;
  if (kind == "mlp.c_fc.bias") return 4 * C;
  return C;  // LayerNorm weights and biases, attn.c_proj.bias, mlp.c_proj.bias
}

// Calls f(global name, numel) for every tensor in file order.
template <class F>
void for_each_in_file_order(const GptConfig& c, F&& f) {
  for (const LlmcKind& k : kKinds) {
    const int64_t n = kind_numel(c, k.name);
    if (!k.per_layer) {
      f(std::string(k.name), n);
      continue;
    }
    for (int l = 0; l < c.n_layer; ++l) f(layer_name(l, k.name), n);
  }
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

GptConfig llmc_config_from_header(const std::string& path, const int32_t* h, int64_t size) {
  if (h[0] != kLlmcModelMagic) {
    std::string hint = h[0] == kShardMagic ? " (that is a token shard's magic)" : "";
    throw InputError("'" + path + "' is not an llm.c model file: magic " + std::to_string(h[0]) + hint +
                     ", expected " + std::to_string(kLlmcModelMagic));
  }
  if (h[1] != kLlmcModelVersionF32) {
    std::string what = h[1] == 5 ? " (bf16 weights) is not supported" : " is not supported";
    throw InputError("llm.c model file '" + path + "': version " + std::to_string(h[1]) + what +
                     "; valid: " + std::to_string(kLlmcModelVersionF32) + " (fp32 with padded vocabulary)");
  }
  GptConfig c;
  c.max_seq_len = h[2];
  c.vocab_size = h[3];
  c.n_layer = h[4];
  c.n_head = h[5];
  c.d_model = h[6];
  c.padded_vocab = h[7];
  const std::pair<const char*, int32_t> fields[] = {{"max_seq_len", h[2]}, {"vocab_size", h[3]},
                                                    {"n_layer", h[4]},     {"n_head", h[5]},
                                                    {"d_model", h[6]},     {"padded_vocab", h[7]}};
  for (const auto& [name, value] : fields)
    if (value <= 0)
      throw InputError("llm.c model file '" + path + "': header field " + name + " is " + std::to_string(value) +
                       "; it must be positive");
  // The reader keeps two map entries per tensor, twelve tensors a layer: a small file whose
  // header claims millions of 1-wide layers would otherwise take gigabytes and minutes to open.
  if (c.n_layer > kLlmcMaxLayers)
    throw InputError("llm.c model file '" + path + "': header field n_layer is " + std::to_string(c.n_layer) +
                     "; valid: 1 to " + std::to_string(kLlmcMaxLayers));
  if (c.d_model % c.n_head != 0)
    throw InputError("llm.c model file '" + path + "': d_model " + std::to_string(c.d_model) +
                     " is not a multiple of n_head " + std::to_string(c.n_head));
  if (c.padded_vocab < c.vocab_size)
    throw InputError("llm.c model file '" + path + "': padded_vocab " + std::to_string(c.padded_vocab) +
                     " is smaller than vocab_size " + std::to_string(c.vocab_size));
  // Keep the size arithmetic below far from int64 overflow (3e12 parameters is 12 TB).
  const double approx =
      (double(c.padded_vocab) + c.max_seq_len) * c.d_model + 13.0 * c.n_layer * c.d_model * c.d_model;
  if (approx > 3e12)
    throw InputError("llm.c model file '" + path + "': the header describes " + std::to_string(approx) +
                     " parameters, more than any file this reader accepts (3e12)");
  const int64_t expected = kHeaderBytes + 4 * c.num_params();
  if (size != expected) {
    std::string what = size < expected ? "is truncated" : "has trailing bytes";
    throw InputError("llm.c model file '" + path + "' " + what + ": " + std::to_string(size) +
                     " bytes, but its header (n_layer " + std::to_string(c.n_layer) + ", d_model " +
                     std::to_string(c.d_model) + ", padded_vocab " + std::to_string(c.padded_vocab) +
                     ", max_seq_len " + std::to_string(c.max_seq_len) + ") needs exactly " +
                     std::to_string(expected));
  }
  return c;
}

std::map<std::string, int64_t> llmc_tensor_offsets(const GptConfig& config) {
  std::map<std::string, int64_t> offsets;
  int64_t at = 0;
  for_each_in_file_order(config, [&](const std::string& name, int64_t n) {
    offsets[name] = at;
    at += n;
  });
  return offsets;
}

LlmcModelFile::LlmcModelFile(const std::string& path) : path_(path) {
  fd_ = open_regular_file(path, "llm.c model file");
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw InputError("cannot stat llm.c model file '" + path + "': " + errno_text());
    const int64_t size = st.st_size;
    if (size < kHeaderBytes)
      throw InputError("llm.c model file '" + path + "' is truncated: " + std::to_string(size) +
                       " bytes, shorter than the " + std::to_string(kHeaderBytes) + "-byte header");
    int32_t header[kLlmcHeaderInts];
    if (::pread(fd_, header, kHeaderBytes, 0) != kHeaderBytes)
      throw InputError("cannot read the header of llm.c model file '" + path + "': " + errno_text());
    config_ = llmc_config_from_header(path, header, size);
    offsets_ = llmc_tensor_offsets(config_);
    for_each_in_file_order(config_, [&](const std::string& name, int64_t n) { sizes_[name] = n; });
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

LlmcModelFile::~LlmcModelFile() {
  if (fd_ >= 0) ::close(fd_);
}

void LlmcModelFile::read(const std::string& name, Range range, float* out) const {
  auto it = offsets_.find(name);
  TRAINER_CHECK(it != offsets_.end(), "llm.c model file has no tensor " + name);
  TRAINER_CHECK(range.begin >= 0 && range.end <= sizes_.at(name) && range.begin <= range.end,
                "read outside tensor " + name);
  char* dst = reinterpret_cast<char*>(out);
  int64_t left = range.size() * 4;
  off_t at = off_t(kHeaderBytes + (it->second + range.begin) * 4);
  while (left > 0) {
    ssize_t got = ::pread(fd_, dst, size_t(left), at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw InputError("cannot read " + name + " from llm.c model file '" + path_ +
                       "': " + (got == 0 ? std::string("unexpected end of file") : errno_text()));
    dst += got;
    at += got;
    left -= got;
  }
}

std::vector<float> LlmcModelFile::read_all(const std::string& name) const {
  auto it = sizes_.find(name);
  TRAINER_CHECK(it != sizes_.end(), "llm.c model file has no tensor " + name);
  std::vector<float> values(size_t(it->second));
  read(name, {0, it->second}, values.data());
  return values;
}

LlmcModel read_llmc_model(const std::string& path) {
  LlmcModelFile file(path);
  LlmcModel model;
  model.config = file.config();
  for_each_in_file_order(model.config,
                         [&](const std::string& name, int64_t) { model.tensors[name] = file.read_all(name); });
  return model;
}

void write_llmc_model(const std::string& path, const GptConfig& config, const LlmcFetchFn& fetch) {
  write_file_atomically(path, "llm.c model file", [&](const AtomicWriteFn& write) {
    int32_t header[kLlmcHeaderInts] = {};
    header[0] = kLlmcModelMagic;
    header[1] = kLlmcModelVersionF32;
    header[2] = config.max_seq_len;
    header[3] = config.vocab_size;
    header[4] = config.n_layer;
    header[5] = config.n_head;
    header[6] = config.d_model;
    header[7] = config.padded_vocab;
    write(header, sizeof header);
    for_each_in_file_order(config, [&](const std::string& name, int64_t n) {
      const std::vector<float> values = fetch(name);
      TRAINER_CHECK(int64_t(values.size()) == n, "write_llmc_model: " + name + " has " +
                                                     std::to_string(values.size()) + " values, expected " +
                                                     std::to_string(n));
      write(values.data(), values.size() * 4);
    });
  });
}

void check_llmc_config(const std::string& recipe_path, const std::string& file_path, const GptConfig& file,
                       const GptConfig& recipe) {
  struct Field {
    const char* file_name;
    const char* recipe_key;
    int file_value, recipe_value;
  };
  const Field fields[] = {
      {"n_layer", "model.n_layer", file.n_layer, recipe.n_layer},
      {"n_head", "model.n_head", file.n_head, recipe.n_head},
      {"d_model", "model.d_model", file.d_model, recipe.d_model},
      {"vocab_size", "model.vocab_size", file.vocab_size, recipe.vocab_size},
      {"padded_vocab", "model.vocab_size rounded up to model.vocab_multiple", file.padded_vocab,
       recipe.padded_vocab},
      {"max_seq_len", "model.seq_len", file.max_seq_len, recipe.max_seq_len},
  };
  for (const Field& f : fields)
    if (f.file_value != f.recipe_value)
      throw ConfigError(recipe_path + ": model.init_from '" + file_path + "' holds a model with " + f.file_name + " " +
                        std::to_string(f.file_value) + ", but the recipe has " + std::to_string(f.recipe_value) +
                        " (" + f.recipe_key + "); the model section must match the file");
}

void LlmcModelFile::check_finite() const {
  std::vector<std::pair<std::string, int64_t>> tensors;
  for_each_in_file_order(config_, [&](const std::string& name, int64_t n) { tensors.push_back({name, n}); });
  check_weights_finite(tensors, [&](const std::string& name, Range range, float* out) { read(name, range, out); },
                       "llm.c model file '" + path_ + "'");
}

void load_llmc_into(ParamStore& store, const std::string& file_path, const std::string& recipe_path) {
  LlmcModelFile file(file_path);
  check_llmc_config(recipe_path, file_path, file.config(), store.layout().config());
  // The whole file, on every rank, before anything is loaded: each rank holds only some
  // slices, but all must agree to refuse the file (and rank 0 must be the one to say why).
  file.check_finite();
  store.load([&](const ParamSpec& spec, Range range, float* out) { file.read(spec.name, range, out); });
}

}  // namespace trainer
