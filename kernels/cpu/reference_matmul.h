// The reference loops of the matrix product (MatmulOp's product, bias and GELU epilogue) and the
// bias gradient (BiasBackwardOp): literal definitions, single thread, that
// tests/kernels/test_cpu_matmul.cpp holds the fast kernels to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cstdint>

#include "kernels/cpu/reference_elementwise.h"
#include "kernels/op_modes.h"

namespace trainer::ref {

// out (M,N) = op(a) (M,K) x op(b) (K,N) [+ bias (N)], overwritten or added per mode;
// a is stored (M,K), or (K,M) when transposed; b (K,N), or (N,K) when transposed.
// gelu_out (M,N) or nullptr receives gelu(out).
template <class F>
void matmul(F* out, const F* a, const F* b, const F* bias, int64_t M, int64_t N, int64_t K,
            Transpose ta, Transpose tb, Accumulate mode, F* gelu_out) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      F s = bias ? bias[j] : F(0);
      for (int64_t k = 0; k < K; ++k) {
        const F av = ta == Transpose::none ? a[i * K + k] : a[k * M + i];
        const F bv = tb == Transpose::none ? b[k * N + j] : b[j * K + k];
        s += av * bv;
      }
      out[i * N + j] = mode == Accumulate::add ? out[i * N + j] + s : s;
      if (gelu_out) gelu_out[i * N + j] = gelu(out[i * N + j]);
    }
  }
}

// dbias (N) += column sums of dout (M,N).
template <class F>
void bias_backward(F* dbias, const F* dout, int64_t M, int64_t N) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) dbias[j] += dout[i * N + j];
}

}  // namespace trainer::ref
