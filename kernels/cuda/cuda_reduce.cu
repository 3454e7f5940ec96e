// Deterministic reductions: sum of squares (for the global gradient norm), the bias gradient
// (column sums) and the second pass of the norms' weight gradients (add_column_partials). All
// run in two passes: a first kernel writes per-block partial sums over a grid fixed by the
// problem size alone (never by the GPU's SM count), a second combines the partials in index
// order. So results are bit-identical run to run and across GPUs.
// sum_squares_many takes many tensors in a few launches: its pieces travel in the kernels'
// parameters (a table of at most kSumTablePieces, under 4 KiB), each piece gets the blocks and
// combining tree that sum_squares alone would give it, and one last kernel adds the piece
// totals in order, as the host would, before the one host read. sum_squares is its one-piece
// form.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/base/check.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

// sum_squares: kSumBlocks x kSumThreads threads stride over the chunks; doubles throughout.
constexpr int kSumBlocks = 512;
constexpr int kSumThreads = 256;

constexpr int kSumTablePieces = 120;

struct SumPiece {
  const void* x;
  int64_t n;
  int block_begin;  // the piece's first block in the launch
  int blocks;       // min(kSumBlocks, blocks with any chunk): the rest would add zeros
  int vec;
};

struct SumTable {
  int count;
  int blocks;
  SumPiece piece[kSumTablePieces];
};
static_assert(sizeof(SumTable) + 32 <= 4096, "the table must fit the 4 KiB kernel parameter space");

// partial[block] for each block of the launch; block b of a piece strides over its chunks as
// block b of a kSumBlocks grid would (a piece given fewer blocks has no chunk beyond them).
template <class T>
__global__ void sum_squares_partial_kernel(const __grid_constant__ SumTable table, double* partial) {
  __shared__ double shared[32];
  const SumPiece& pc = table.piece[last_piece_at(table.piece, table.count, &SumPiece::block_begin, blockIdx.x)];
  const T* x = static_cast<const T*>(pc.x);
  const bool vec = pc.vec != 0;
  const int64_t chunks = (pc.n + kChunk - 1) / kChunk;
  double acc = 0;
  for (int64_t c = int64_t(blockIdx.x - pc.block_begin) * kSumThreads + threadIdx.x; c < chunks;
       c += int64_t(kSumBlocks) * kSumThreads) {
    const int64_t i = c * kChunk;
    const int count = static_cast<int>(min(int64_t(kChunk), pc.n - i));
    float v[kChunk];
    load_chunk(v, x + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) acc += double(v[j]) * double(v[j]);
  }
  acc = block_reduce(acc, SumOp{}, 0.0, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// totals[piece] = the piece's partials combined by a kSumBlocks-thread tree, thread i holding
// partial i (0 past the piece's blocks), as one sum_squares combines its 512 partials.
__global__ void sum_partials_kernel(const __grid_constant__ SumTable table, const double* partial, double* totals) {
  __shared__ double shared[32];
  const SumPiece& pc = table.piece[blockIdx.x];
  double acc = int(threadIdx.x) < pc.blocks ? partial[pc.block_begin + threadIdx.x] : 0.0;
  acc = block_reduce(acc, SumOp{}, 0.0, shared);
  if (threadIdx.x == 0) totals[blockIdx.x] = acc;
}

// *out = totals[0] + totals[1] + ..., left to right.
__global__ void sum_in_order_kernel(const double* totals, int64_t count, double* out) {
  double acc = 0;
  for (int64_t i = 0; i < count; ++i) acc += totals[i];
  *out = acc;
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

// Partials each thread loads before adding them, so that many loads are in flight where the
// compiler's unrolling of the plain loop gave 4: a norm backward leaves one partial per row
// block (in bf16, 1366 at gpt2-124m's 32 x 1024, 745 at gpt2-1.5b's 8 x 1024), 43 or 24 per
// thread, and this latency-bound kernel waits through their rounds of loads: 11 or 6 at 4
// deep, 3 or 2 at 16.
constexpr int kPartialsInFlight = 16;

// dst[c] += sum over g of partial[g, c], in a fixed order: 32 columns x 32 thread rows; thread
// row y sums partials y, y+32, ... in that order; then row 0 adds the 32 sums in row order.
// blockIdx.y picks the sum (a, or b): a norm's two weight gradients in one launch. The bound
// holds ptxas to the 64 registers a 1024-thread block may have, and asks for one block per SM
// only (the grid has 2 ceil(C / 32) blocks), which leaves it 64 for the loads in flight.
__global__ void __launch_bounds__(1024, 1)
    add_column_partials_kernel(ColumnPartials a, ColumnPartials b, int64_t count, int64_t C) {
  __shared__ float sums[32][33];
  const ColumnPartials s = blockIdx.y == 0 ? a : b;
  const int64_t c = blockIdx.x * int64_t(32) + threadIdx.x;
  float acc = 0;
  if (c < C)
    for (int64_t g = threadIdx.y; g < count; g += 32 * kPartialsInFlight) {
      float v[kPartialsInFlight];
#pragma unroll
      for (int i = 0; i < kPartialsInFlight; ++i) v[i] = g + 32 * i < count ? s.partial[(g + 32 * i) * C + c] : 0.0f;
#pragma unroll
      for (int i = 0; i < kPartialsInFlight; ++i)
        if (g + 32 * i < count) acc += v[i];
    }
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float total = 0;
#pragma unroll
    for (int i = 0; i < 32; ++i) total += sums[i][threadIdx.x];
    s.dst[c] += total;
  }
}

void launch_add_column_partials(const Context& ctx, ColumnPartials a, ColumnPartials b, unsigned pairs,
                                int64_t count, int64_t C) {
  if (C == 0) return;
  add_column_partials_kernel<<<dim3(static_cast<unsigned>(ceil_div(C, 32)), pairs), dim3(32, 32), 0, ctx.stream>>>(
      a, b, count, C);
  TRAINER_LAUNCH_CHECK();
}

}  // namespace

void add_column_partials(const Context& ctx, ColumnPartials a, int64_t count, int64_t C) {
  launch_add_column_partials(ctx, a, a, 1, count, C);
}

void add_column_partials(const Context& ctx, ColumnPartials a, ColumnPartials b, int64_t count, int64_t C) {
  launch_add_column_partials(ctx, a, b, 2, count, C);
}

// One pass over all tensors (a few launches) and one host read.
double run(const Context& ctx, const SumSquaresManyOp& op) {
  if (op.xs.empty()) return 0.0;
  const int64_t pieces = int64_t(op.xs.size());
  std::vector<int> blocks(op.xs.size());
  int64_t all_blocks = 0;
  for (size_t i = 0; i < op.xs.size(); ++i) {
    blocks[i] = int(std::min<int64_t>(kSumBlocks, ceil_div(ceil_div(op.xs[i].numel(), kChunk), kSumThreads)));
    all_blocks += blocks[i];
  }
  ScratchCarver plan(nullptr);
  plan.take<double>(size_t(std::max<int64_t>(all_blocks, 1)));
  plan.take<double>(size_t(pieces));
  plan.take<double>(1);
  ScratchCarver carve(ctx.workspace->get(plan.bytes()));
  double* partial = carve.take<double>(size_t(std::max<int64_t>(all_blocks, 1)));
  double* totals = carve.take<double>(size_t(pieces));
  double* total = carve.take<double>(1);
  dispatch_float(op.xs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    SumTable table{};
    int64_t first_piece = 0, first_block = 0;
    auto launch = [&] {
      if (table.count == 0) return;
      if (table.blocks > 0) {
        sum_squares_partial_kernel<T><<<table.blocks, kSumThreads, 0, ctx.stream>>>(table, partial + first_block);
        TRAINER_LAUNCH_CHECK();
      }
      sum_partials_kernel<<<table.count, kSumBlocks, 0, ctx.stream>>>(table, partial + first_block,
                                                                     totals + first_piece);
      TRAINER_LAUNCH_CHECK();
      first_piece += table.count;
      first_block += table.blocks;
      table.count = 0;
      table.blocks = 0;
    };
    for (size_t i = 0; i < op.xs.size(); ++i) {
      const Tensor& x = op.xs[i];
      table.piece[table.count++] = SumPiece{x.data, x.numel(), table.blocks, blocks[i], aligned16(x.data) ? 1 : 0};
      table.blocks += blocks[i];
      if (table.count == kSumTablePieces) launch();
    }
    launch();
  });
  sum_in_order_kernel<<<1, 1, 0, ctx.stream>>>(totals, pieces, total);
  TRAINER_LAUNCH_CHECK();
  double result = 0;
  TRAINER_CUDA_CHECK(cudaMemcpyAsync(&result, total, sizeof result, cudaMemcpyDeviceToHost, ctx.stream));
  TRAINER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  return result;
}

double run(const Context& ctx, const SumSquaresOp& op) {
  return run(ctx, SumSquaresManyOp{{op.x}});
}

void run(const Context& ctx, const BiasBackwardOp& op) {
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
