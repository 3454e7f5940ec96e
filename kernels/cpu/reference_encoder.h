// The reference loops of the token embedding (EncoderForwardOp, EncoderBackwardOp): literal
// definitions, single thread, that tests/kernels/test_cpu_encoder.cpp holds the fast kernels to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cstdint>

namespace trainer::ref {

// out (B,T,C); tokens (B,T); wte (V,C) holds ids [vocab_start, vocab_start + V); wpe (>=T,C)
// or nullptr; positions (B,T) or nullptr: the wpe row of each token instead of t.
template <class F>
void encoder_forward(F* out, const int32_t* tokens, const F* wte, const F* wpe, int64_t B,
                     int64_t T, int64_t C, int64_t V, int64_t vocab_start, const int32_t* positions = nullptr) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = tokens[b * T + t] - vocab_start;
      F* o = out + (b * T + t) * C;
      for (int64_t c = 0; c < C; ++c) {
        F x = (row >= 0 && row < V) ? wte[row * C + c] : F(0);
        if (wpe) x += wpe[(positions ? positions[b * T + t] : t) * C + c];
        o[c] = x;
      }
    }
  }
}

// dwte (V,C) +=; dwpe (>=T,C) += or nullptr; dout (B,T,C).
template <class F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int32_t* tokens, int64_t B,
                      int64_t T, int64_t C, int64_t V, int64_t vocab_start, const int32_t* positions = nullptr) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = tokens[b * T + t] - vocab_start;
      const F* d = dout + (b * T + t) * C;
      for (int64_t c = 0; c < C; ++c) {
        if (row >= 0 && row < V) dwte[row * C + c] += d[c];
        if (dwpe) dwpe[(positions ? positions[b * T + t] : t) * C + c] += d[c];
      }
    }
  }
}

}  // namespace trainer::ref
