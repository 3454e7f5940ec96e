// GptConfig: the shape of a GPT-2 style model (what the parameter table is derived from).
#pragma once

#include <cstdint>

namespace trainer {

struct GptConfig {
  int n_layer = 12;
  int n_head = 12;
  int d_model = 768;
  int vocab_size = 50257;    // real vocabulary; ids >= this never occur
  int padded_vocab = 50304;  // rows of the embedding table (padding rows stay zero)
  int max_seq_len = 1024;    // rows of the position table
  float init_std = 0.02f;

  int head_dim() const { return d_model / n_head; }
  // Parameters, counting the padded vocabulary rows, with and without the position table.
  int64_t num_params() const;
  int64_t num_params_no_wpe() const;
};

}  // namespace trainer
