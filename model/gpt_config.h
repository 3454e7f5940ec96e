// GptConfig: the shape of a GPT-style decoder (what the parameter table is derived from), for
// both families:
// - gpt2: pre-LayerNorm blocks with biases, learned position table, GELU MLP of width 4C,
//   multi-head attention, embeddings tied to the output head.
// - llama: pre-RMSNorm blocks without biases, rotary positions (optionally with Llama 3.1's
//   frequency scaling), SwiGLU MLP of width ffn_dim, grouped-query attention (n_kv_head),
//   optional per-head RMSNorm of q and k (qk_norm), tied or untied output head.
// Fields a family does not use keep their defaults (the recipe refuses them).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/base/enum_names.h"

namespace trainer {

enum class ModelArch : uint8_t { gpt2, llama };
inline constexpr EnumName<ModelArch> kModelArchNames[] = {{ModelArch::gpt2, "gpt2"}, {ModelArch::llama, "llama"}};
inline const char* model_arch_name(ModelArch a) { return enum_name(kModelArchNames, a); }

enum class TiedEmbeddings : uint8_t { tied, untied };
enum class QkNorm : uint8_t { off, on };

// Llama 3.1's rotary frequency scaling (Hugging Face's rope_type "llama3"); factor 0 = none.
struct RopeScaling {
  float factor = 0;
  float low_freq_factor = 1;
  float high_freq_factor = 4;
  int original_context = 8192;
  bool enabled() const { return factor > 0; }
};

struct GptConfig {
  ModelArch arch = ModelArch::gpt2;
  int n_layer = 12;
  int n_head = 12;
  int d_model = 768;
  int vocab_size = 50257;    // real vocabulary; ids >= this never occur
  int padded_vocab = 50304;  // rows of the embedding table (padding rows stay zero)
  int max_seq_len = 1024;    // gpt2: rows of the position table; llama: the longest context
  float init_std = 0.02f;
  // llama only:
  int n_kv_head = 0;  // 0 = n_head
  int ffn_dim = 0;    // SwiGLU width (the recipe resolves it when absent)
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  TiedEmbeddings tie = TiedEmbeddings::tied;
  QkNorm qk_norm = QkNorm::off;

  int head_dim() const { return d_model / n_head; }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  // Width of the MLP's hidden layer: 4C for gpt2, ffn_dim for llama.
  int mlp_dim() const { return arch == ModelArch::gpt2 ? 4 * d_model : ffn_dim; }
  bool has_position_table() const { return arch == ModelArch::gpt2; }
  bool tied() const { return tie == TiedEmbeddings::tied; }
  // Parameters, counting the padded vocabulary rows (and an untied head), with and without
  // the position table.
  int64_t num_params() const;
  int64_t num_params_no_wpe() const;
  // Parameters of one block, and of the final norm.
  int64_t block_params() const;
  int64_t final_norm_params() const { return arch == ModelArch::gpt2 ? 2 * int64_t(d_model) : d_model; }
};

// "gpt2 12 layers, 12 heads, d_model 768, vocab 50257 (padded 50304), context 1024"; llama adds
// its k/v heads, MLP width and tying.
std::string describe_shape(const GptConfig& c);

// Llama's rule for the SwiGLU width when a recipe gives none: 2/3 of 4C (the parameter count
// of a 4C GELU MLP spread over three matrices), rounded up to a multiple of `multiple_of`.
// 64-bit: the recipe checks it fits an int before anything uses it as one.
int64_t llama_ffn_dim64(int d_model, int multiple_of);
inline int llama_ffn_dim(int d_model, int multiple_of) { return int(llama_ffn_dim64(d_model, multiple_of)); }

}  // namespace trainer
