// Model shapes for tests: gpt_config() from its six numbers, and tiny_gpt_config(), the model of
// the file-format and layout tests. Header-only on purpose: only
// tests that link trainer_model (or above) include it, so trainer_test_util stays free of
// model/.
#pragma once

#include "model/gpt_config.h"

namespace trainer::testing {

inline GptConfig gpt_config(int n_layer, int n_head, int d_model, int vocab_size, int padded_vocab, int max_seq_len) {
  GptConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.d_model = d_model;
  c.vocab_size = vocab_size;
  c.padded_vocab = padded_vocab;
  c.max_seq_len = max_seq_len;
  return c;
}

// A 2-layer, 2-head, d_model 8 model with a vocabulary of 10 padded to 16 and 5 positions:
// small enough for file-format tests, divisible for tensor 2.
inline GptConfig tiny_gpt_config() { return gpt_config(2, 2, 8, 10, 16, 5); }

}  // namespace trainer::testing
