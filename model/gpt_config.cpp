// GptConfig's one-line description (see gpt_config.h).
#include "model/gpt_config.h"

#include <string>

namespace trainer {

std::string describe_shape(const GptConfig& c) {
  const std::string heads = std::to_string(c.n_head) + " heads" +
                            (c.arch == ModelArch::llama && c.kv_heads() != c.n_head
                                 ? " (" + std::to_string(c.kv_heads()) + " k/v)"
                                 : "");
  std::string s = std::string(model_arch_name(c.arch)) + " " + std::to_string(c.n_layer) + " layers, " + heads +
                  ", d_model " + std::to_string(c.d_model);
  if (c.arch == ModelArch::llama) s += ", ffn " + std::to_string(c.ffn_dim) + (c.tied() ? ", tied" : ", untied");
  return s + ", vocab " + std::to_string(c.vocab_size) + " (padded " + std::to_string(c.padded_vocab) + "), context " +
         std::to_string(c.max_seq_len);
}

}  // namespace trainer
