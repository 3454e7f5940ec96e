// GptConfig: the shape of a GPT-style decoder (what the parameter table is derived from). What
// the family makes of it (norm, MLP, positions, names, ...) is its description, family()
// (model_family.h): gpt2 fixes the fields after init_std (multi-head attention, MLP width 4C,
// tied head), llama reads them (grouped-query attention, SwiGLU width ffn_dim, rotary positions
// with optional Llama 3.1 scaling, optional per-head RMSNorm of q and k, tied or untied head).
// Fields a family does not read keep their defaults (the recipe refuses them).
#pragma once

#include <cstdint>
#include <string>

#include "model/model_family.h"

namespace trainer {

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
  ModelArch arch = kDefaultArch;
  int n_layer = 12;
  int n_head = 12;
  int d_model = 768;
  int vocab_size = 50257;    // real vocabulary; ids >= this never occur
  int padded_vocab = 50304;  // rows of the embedding table (padding rows stay zero)
  int max_seq_len = 1024;    // the longest context (and the rows of a learned position table)
  float init_std = 0.02f;
  // Read by families with ConfigKeys::llama:
  int n_kv_head = 0;  // 0 = n_head
  int ffn_dim = 0;    // SwiGLU width (the recipe resolves it when absent)
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  TiedEmbeddings tie = TiedEmbeddings::tied;
  QkNorm qk_norm = QkNorm::off;

  const ModelFamily& family() const { return family_of(arch); }
  int head_dim() const { return d_model / n_head; }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  // Width of the MLP's hidden layer (the family's rule: 4C or ffn_dim).
  int mlp_dim() const { return int(family().mlp_dim(*this)); }
  bool has_position_table() const { return family().has_position_table(); }
  bool tied() const { return tie == TiedEmbeddings::tied; }
  // Parameters, counting the padded vocabulary rows (and an untied head), with and without
  // the position table.
  int64_t num_params() const;
  int64_t num_params_no_wpe() const;
  // Parameters of one block, and of the final norm.
  int64_t block_params() const;
  int64_t final_norm_params() const;
};

// "gpt2 12 layers, 12 heads, d_model 768, vocab 50257 (padded 50304), context 1024"; a family
// reading llama's keys adds its k/v heads, MLP width and tying.
std::string describe_shape(const GptConfig& c);

// Llama's rule for the SwiGLU width when a recipe gives none: 2/3 of 4C (the parameter count
// of a 4C GELU MLP spread over three matrices), rounded up to a multiple of `multiple_of`.
// 64-bit: the recipe checks it fits an int before anything uses it as one.
int64_t llama_ffn_dim64(int d_model, int multiple_of);
inline int llama_ffn_dim(int d_model, int multiple_of) { return int(llama_ffn_dim64(d_model, multiple_of)); }

}  // namespace trainer
