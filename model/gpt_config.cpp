// GptConfig's counts and one-line description (see gpt_config.h).
#include "model/gpt_config.h"

#include <string>

#include "model/param_table.h"

namespace trainer {

int64_t GptConfig::block_params() const {
  std::vector<ParamSpec> layer;
  family().add_layer_params(*this, 0, layer);
  int64_t n = 0;
  for (const ParamSpec& spec : layer) n += spec.numel();
  return n;
}

int64_t GptConfig::final_norm_params() const {
  return (family().names.final_norm_bias ? 2 : 1) * int64_t(d_model);
}

int64_t GptConfig::num_params() const {
  const int64_t C = d_model, V = padded_vocab;
  const int64_t tables = V * C * (tied() ? 1 : 2) + (has_position_table() ? int64_t(max_seq_len) * C : 0);
  return tables + int64_t(n_layer) * block_params() + final_norm_params();
}

int64_t GptConfig::num_params_no_wpe() const {
  return num_params() - (has_position_table() ? int64_t(max_seq_len) * d_model : 0);
}

int64_t llama_ffn_dim64(int d_model, int multiple_of) {
  const int64_t hidden = 2 * (4 * int64_t(d_model)) / 3;
  const int64_t m = multiple_of > 0 ? multiple_of : 1;
  return (hidden + m - 1) / m * m;
}

std::string describe_shape(const GptConfig& c) {
  const bool llama_keys = c.family().keys == ConfigKeys::llama;
  const std::string heads = std::to_string(c.n_head) + " heads" +
                            (llama_keys && c.kv_heads() != c.n_head
                                 ? " (" + std::to_string(c.kv_heads()) + " k/v)"
                                 : "");
  std::string s = std::string(c.family().name()) + " " + std::to_string(c.n_layer) + " layers, " + heads +
                  ", d_model " + std::to_string(c.d_model);
  if (llama_keys) s += ", ffn " + std::to_string(c.ffn_dim) + (c.tied() ? ", tied" : ", untied");
  return s + ", vocab " + std::to_string(c.vocab_size) + " (padded " + std::to_string(c.padded_vocab) + "), context " +
         std::to_string(c.max_seq_len);
}

}  // namespace trainer
