// tiny_gpt_config: the model of the file-format and layout tests. Header-only on purpose: only
// tests that link trainer_model (or above) include it, so trainer_test_util stays free of
// model/.
#pragma once

#include "model/gpt_config.h"

namespace trainer::testing {

// A 2-layer, 2-head, d_model 8 model with a vocabulary of 10 padded to 16 and 5 positions:
// small enough for file-format tests, divisible for tensor 2.
inline GptConfig tiny_gpt_config() {
  GptConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.d_model = 8;
  c.vocab_size = 10;
  c.padded_vocab = 16;
  c.max_seq_len = 5;
  return c;
}

}  // namespace trainer::testing
