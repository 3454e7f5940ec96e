// Element-wise ops and sum of squares (fast CPU path). Element-wise loops are `omp parallel
// for simd` over the flat range, so in-place use (dinp == dout, out == a) is safe; SwiGLU's
// over rows of [gate | up].
// sum_squares adds fixed chunks of kSumChunk elements in double and combines the chunk sums
// in chunk order: the same bits for every thread count.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/base/bf16.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {
constexpr int64_t kParallelMin = 1 << 15;  // below this, a parallel region costs more than it saves
constexpr int64_t kSumChunk = 1 << 16;
}  // namespace

void gelu_forward(float* out, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_fast(inp[i]);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) dinp[i] = gelu_grad_fast(inp[i]) * dout[i];
}

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

void add(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void scale(float* x, float alpha, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

void fill(float* x, float value, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] = value;
}

void copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

void cast_to_bf16(uint16_t* dst, const float* src, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_from_f32(src[i]);
}

void cast_from_bf16(float* dst, const uint16_t* src, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_from_bf16(src[i]);
}

double sum_squares(const float* x, int64_t n) {
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const float* p = x + c * kSumChunk;
    const int64_t len = std::min(kSumChunk, n - c * kSumChunk);
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < len; ++i) s += double(p[i]) * double(p[i]);
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace trainer::cpu
