// Deterministic reductions: sum of squares (for the global gradient norm), the bias gradient
// (column sums) and the second pass of the norms' weight gradients (add_column_partials). All
// run in two passes: a first kernel writes per-block partial sums over a grid fixed by the
// problem size alone (never by the GPU's SM count), a second combines the partials in index
// order. So results are bit-identical run to run and across GPUs.
#include <string>

#include "kernels/base/check.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

// sum_squares: kSumBlocks x kSumThreads threads stride over the chunks; doubles throughout.
constexpr int kSumBlocks = 512;
constexpr int kSumThreads = 256;

template <class T>
__global__ void sum_squares_partial_kernel(const T* x, int64_t n, bool vec, double* partial) {
  __shared__ double shared[32];
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  double acc = 0;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = c * kChunk;
    const int count = static_cast<int>(min(int64_t(kChunk), n - i));
    float v[kChunk];
    load_chunk(v, x + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) acc += double(v[j]) * double(v[j]);
  }
  acc = block_reduce(acc, SumOp{}, 0.0, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void sum_partials_kernel(const double* partial, int n, double* out) {
  __shared__ double shared[32];
  double acc = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
  acc = block_reduce(acc, SumOp{}, 0.0, shared);
  if (threadIdx.x == 0) *out = acc;
}

// bias_backward: blocks of (32 columns) x (8 thread rows) own kRowsPerChunk rows each.
constexpr int kColTile = 32;
constexpr int kRowThreads = 8;
constexpr int kRowsPerChunk = 256;

// partial (chunks, N): column sums of dout over the rows of one chunk.
template <class T>
__global__ void column_partial_kernel(const T* dout, int64_t M, int64_t N, float* partial) {
  __shared__ float sums[kRowThreads][kColTile + 1];
  const int64_t col = blockIdx.x * int64_t(kColTile) + threadIdx.x;
  const int64_t row0 = blockIdx.y * int64_t(kRowsPerChunk);
  const int64_t row_end = min(M, row0 + kRowsPerChunk);
  float acc = 0;
  if (col < N)
    for (int64_t r = row0 + threadIdx.y; r < row_end; r += kRowThreads) acc += to_f32(dout[r * N + col]);
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < N) {
    float total = 0;
#pragma unroll
    for (int i = 0; i < kRowThreads; ++i) total += sums[i][threadIdx.x];
    partial[blockIdx.y * N + col] = total;
  }
}

// dbias[c] += sum over chunks of partial[chunk, c], in chunk order.
__global__ void column_final_kernel(float* dbias, const float* partial, int64_t chunks, int64_t N) {
  const int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (col >= N) return;
  float total = 0;
  for (int64_t g = 0; g < chunks; ++g) total += partial[g * N + col];
  dbias[col] += total;
}

// dst[c] += sum over g of partial[g, c], in a fixed order: 32 columns x 32 thread rows; thread
// row y sums partials y, y+32, ...; then row 0 adds the 32 sums in row order.
__global__ void add_column_partials_kernel(float* dst, const float* partial, int64_t count, int64_t C) {
  __shared__ float sums[32][33];
  const int64_t c = blockIdx.x * int64_t(32) + threadIdx.x;
  float acc = 0;
  if (c < C)
    for (int64_t g = threadIdx.y; g < count; g += 32) acc += partial[g * C + c];
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float total = 0;
#pragma unroll
    for (int i = 0; i < 32; ++i) total += sums[i][threadIdx.x];
    dst[c] += total;
  }
}

}  // namespace

void add_column_partials(const Context& ctx, float* dst, const float* partial, int64_t count, int64_t C) {
  if (C == 0) return;
  add_column_partials_kernel<<<static_cast<unsigned>(ceil_div(C, 32)), dim3(32, 32), 0, ctx.stream>>>(
      dst, partial, count, C);
  TRAINER_LAUNCH_CHECK();
}

double sum_squares(const Context& ctx, const SumSquaresOp& op) {
  const Tensor& x = op.x;
  const int64_t n = x.numel();
  if (n == 0) return 0.0;
  ScratchCarver plan(nullptr);
  plan.take<double>(kSumBlocks);
  plan.take<double>(1);
  ScratchCarver carve(ctx.workspace->get(plan.bytes()));
  double* partial = carve.take<double>(kSumBlocks);
  double* total = carve.take<double>(1);
  dispatch_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    sum_squares_partial_kernel<T><<<kSumBlocks, kSumThreads, 0, ctx.stream>>>(
        x.ptr<const T>(), n, aligned16(x.data), partial);
    TRAINER_LAUNCH_CHECK();
  });
  sum_partials_kernel<<<1, kSumBlocks, 0, ctx.stream>>>(partial, kSumBlocks, total);
  TRAINER_LAUNCH_CHECK();
  double result = 0;
  TRAINER_CUDA_CHECK(cudaMemcpyAsync(&result, total, sizeof result, cudaMemcpyDeviceToHost, ctx.stream));
  TRAINER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  return result;
}

void bias_backward(const Context& ctx, const BiasBackwardOp& op) {
  const Tensor &dbias = op.dbias, &dout = op.dout;
  const int64_t M = matrix_rows(dout), N = matrix_cols(dout);
  if (M == 0 || N == 0) return;
  const int64_t chunks = ceil_div(M, kRowsPerChunk);
  TRAINER_CHECK(chunks <= 65535, "bias_backward: too many rows (" + std::to_string(M) + ")");
  float* partial = static_cast<float*>(ctx.workspace->get(sizeof(float) * chunks * N));
  const dim3 grid(static_cast<unsigned>(ceil_div(N, kColTile)), static_cast<unsigned>(chunks));
  const dim3 block(kColTile, kRowThreads);
  dispatch_float(dout.dtype, [&](auto tag) {
    using T = decltype(tag);
    column_partial_kernel<T><<<grid, block, 0, ctx.stream>>>(dout.ptr<const T>(), M, N, partial);
    TRAINER_LAUNCH_CHECK();
  });
  column_final_kernel<<<static_cast<unsigned>(ceil_div(N, 256)), 256, 0, ctx.stream>>>(
      dbias.ptr<float>(), partial, chunks, N);
  TRAINER_LAUNCH_CHECK();
}

}  // namespace trainer::cuda
