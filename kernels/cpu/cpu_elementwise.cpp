// Element-wise ops and sum of squares (fast CPU path). Element-wise loops are `omp parallel
// for simd` over the flat range, so in-place use (dinp == dout, out == a) is safe.
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

void run(const GeluForwardOp& op) { gelu_forward(f32(op.out), f32(op.inp), op.inp.numel()); }

void run(const GeluBackwardOp& op) { gelu_backward(f32(op.dinp), f32(op.inp), f32(op.dout), op.inp.numel()); }

void run(const AddOp& op) { add(f32(op.out), f32(op.a), f32(op.b), op.a.numel()); }

void run(const ScaleOp& op) { scale(f32(op.x), op.alpha, op.x.numel()); }

void run(const FillOp& op) { fill(f32(op.x), op.value, op.x.numel()); }

// Between equal dtypes a copy (dst and src never overlap); bf16 is the one other dtype here.
void run(const CastOp& op) {
  const int64_t n = op.src.numel();
  if (op.dst.dtype == op.src.dtype) copy(op.dst.data, op.src.data, op.src.bytes());
  else if (op.dst.dtype == DType::bf16) cast_to_bf16(op.dst.ptr<uint16_t>(), f32(op.src), n);
  else cast_from_bf16(f32(op.dst), op.src.ptr<uint16_t>(), n);
}

double run(const SumSquaresOp& op) { return sum_squares(f32(op.x), op.x.numel()); }

double run(const SumSquaresManyOp& op) {
  double total = 0;
  for (const Tensor& x : op.xs) total += sum_squares(f32(x), x.numel());
  return total;
}

}  // namespace trainer::cpu
