// ModelFamily: what one model family is, as data. Each family (gpt2_family.cpp,
// llama_family.cpp) is one description: its norm, MLP and width rule, positions, head tying,
// which config keys it reads, llm.c file support, its parameter names (Hugging Face's), its
// config.json mapping both ways, its parameter table (which holds its biases, if any) and its
// block code. The stage, the
// decoder, the planner, checkpoints and the Hugging Face code ask the description; none of them
// switches on the family. Adding a family is a new description plus its block code, and a row
// in kModelArchNames and family_of().
//
// Invariants: family_of(a).arch == a for every ModelArch; a description never changes (they
// are immutable function-local statics).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/base/enum_names.h"

namespace trainer {

struct GptConfig;
struct ParamSpec;
struct BlockCode;  // model/block_code.h

// A family's name in recipes (model.arch), manifests and messages.
enum class ModelArch : uint8_t { gpt2, llama };
inline constexpr EnumName<ModelArch> kModelArchNames[] = {{ModelArch::gpt2, "gpt2"}, {ModelArch::llama, "llama"}};
inline const char* model_arch_name(ModelArch a) { return enum_name(kModelArchNames, a); }
// The family of a recipe or manifest that names none (written before there was a choice).
inline constexpr ModelArch kDefaultArch = ModelArch::gpt2;

enum class NormKind : uint8_t { layernorm, rmsnorm };  // LayerNorm keeps a mean and rstd per row, RMSNorm rstd
enum class MlpKind : uint8_t { gelu, swiglu };         // swiglu's first product is [gate | up]
enum class MlpWidth : uint8_t { four_c, ffn_dim };     // the hidden width: 4 d_model, or config.ffn_dim
enum class Positions : uint8_t { learned_table, rotary };
enum class HeadTying : uint8_t { always, optional };  // optional: config.tie chooses
// The config keys a family reads beyond the shape every family has (n_layer, n_head, d_model,
// vocab_size, seq_len): llama's are n_kv_head, ffn_dim, norm_eps, rope_theta, rope_scaling,
// tie_embeddings and qk_norm (its recipe keys, manifest fields and their checks).
enum class ConfigKeys : uint8_t { base, llama };
enum class LlmcFiles : uint8_t { unsupported, supported };  // llm.c's .bin holds GPT-2 weights

// Global names of the tables the stages address directly, and the printable unit names.
struct FamilyNames {
  const char* embedding;          // the token table
  const char* position_table;     // nullptr without a learned table
  const char* final_norm_weight;
  const char* final_norm_bias;    // nullptr without
  const char* layer_prefix;       // layer l's names start with this, l and "."
  const char* embedding_unit;     // unit_name()'s words
  const char* position_unit;
  const char* final_norm_unit;
  const char* layer_unit;
};

// Whether a config.json key must be there.
enum class HfKey : uint8_t { optional, required };
// The values a config.json number may take (every one must also be finite and fit a float).
enum class HfNumber : uint8_t { any, non_negative, positive };

// What a family's config.json reader reads through (app/hf implements it over the parsed
// file, so model/ needs no JSON). Every call throws InputError naming the file and the key.
class HfConfigSource {
 public:
  virtual ~HfConfigSource() = default;
  // An integer >= least (counts of layers, heads, ... pass 1: a 0 would divide by zero later).
  virtual int integer(const char* key, int fallback, HfKey need, int least) const = 0;
  virtual double number(const char* key, double fallback, HfNumber range) const = 0;
  virtual bool boolean(const char* key, bool fallback) const = 0;
  virtual std::string string(const char* key, const std::string& fallback) const = 0;
  // The object under `key`, read the same way; nullptr when it is absent or null, InputError
  // when it is another kind of value.
  virtual std::unique_ptr<HfConfigSource> object(const char* key) const = 0;
  // Unless ok: "key" `value` is not implemented; valid: `valid`.
  virtual void require(const char* key, bool ok, const std::string& value, const std::string& valid) const = 0;
};

// config.json's members in the order written: key and JSON text.
using HfConfigEntries = std::vector<std::pair<std::string, std::string>>;

// The family's Hugging Face folder: config.json both ways and the tensors the folder stores
// differently (the names themselves are the parameter table's).
struct HfFamily {
  const char* model_type;  // config.json's "model_type"
  // The shape config.json describes (vocab_size, not yet padded); InputError for a setting
  // the family does not implement.
  GptConfig (*read_config)(const HfConfigSource& config);
  // Every member but vocab_size and torch_dtype, which every family writes last.
  HfConfigEntries (*write_config)(const GptConfig& config);
  // Weights the folder stores (in, out), the transpose of ours, by name suffix (GPT-2's Conv1D).
  std::vector<std::string> transposed;
  // Buffers transformers saves beside the weights and recomputes on load (skipped on import).
  std::vector<std::string> recomputed;
};

struct ModelFamily {
  ModelArch arch;
  NormKind norm;
  MlpKind mlp;
  MlpWidth mlp_width;
  Positions positions;
  HeadTying tying;
  ConfigKeys keys;
  LlmcFiles llmc;
  FamilyNames names;
  HfFamily hf;
  // One layer's parameters, appended in buffer order (units and names from the config).
  void (*add_layer_params)(const GptConfig& config, int layer, std::vector<ParamSpec>& table);
  // The whole table: embeddings, every layer (add_layer_params), final norm, untied head.
  std::vector<ParamSpec> (*param_table)(const GptConfig& config);
  const BlockCode* block;

  const char* name() const { return model_arch_name(arch); }
  bool has_position_table() const { return positions == Positions::learned_table; }
  // The MLP's hidden width for a config.
  int64_t mlp_dim(const GptConfig& config) const;
  // The width of the MLP's first product (and of its saved output and gradient) for a hidden
  // width (global or one rank's): swiglu computes gate and up in one product.
  int64_t fc_width(int64_t width) const { return mlp == MlpKind::swiglu ? 2 * width : width; }
};

const ModelFamily& family_of(ModelArch arch);
// Every family, in kModelArchNames' order.
std::vector<const ModelFamily*> model_families();
// The family whose config.json says `model_type`, or nullptr.
const ModelFamily* family_by_hf_type(const std::string& model_type);
// "gpt2, llama": the families' names for messages.
std::string model_arch_choices();

// The descriptions (gpt2_family.cpp, llama_family.cpp).
const ModelFamily& gpt2_family();
const ModelFamily& llama_family();

}  // namespace trainer
