// SwiGLU, forward and backward (fast CPU path): rows of [gate | up], parallel over rows, each
// output element computed by one thread, so the result does not depend on the thread count.
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {
constexpr int64_t kParallelMin = 1 << 15;  // below this, a parallel region costs more than it saves
}  // namespace

void swiglu_forward(float* out, const float* inp, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static) if (N * F > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const float* g = inp + n * 2 * F;
    const float* u = g + F;
    float* o = out + n * F;
#pragma omp simd
    for (int64_t i = 0; i < F; ++i) o[i] = g[i] / (1.0f + exp_fast(-g[i])) * u[i];
  }
}

// d/dg silu(g) = s (1 + g (1 - s)), s = sigmoid(g).
void swiglu_backward(float* dinp, const float* inp, const float* dout, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static) if (N * F > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const float* g = inp + n * 2 * F;
    const float* u = g + F;
    const float* d = dout + n * F;
    float* dg = dinp + n * 2 * F;
    float* du = dg + F;
#pragma omp simd
    for (int64_t i = 0; i < F; ++i) {
      const float s = 1.0f / (1.0f + exp_fast(-g[i]));
      dg[i] = d[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
      du[i] = d[i] * g[i] * s;
    }
  }
}

void run(const SwigluForwardOp& op) {
  swiglu_forward(f32(op.out), f32(op.inp), matrix_rows(op.inp), matrix_cols(op.inp) / 2);
}

void run(const SwigluBackwardOp& op) {
  swiglu_backward(f32(op.dinp), f32(op.inp), f32(op.dout), matrix_rows(op.inp), matrix_cols(op.inp) / 2);
}

}  // namespace trainer::cpu
