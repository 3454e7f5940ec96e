// Token + position embedding, forward and backward.
// Backward is deterministic without floating-point atomics: the positions of the batch are
// bucketed by vocabulary row with a stable counting sort (integer counts only), which also
// lists the rows the batch touches; one thread owns each (touched row, channel) of dwte and
// sums its bucket's rows of dout in position order. dwpe sums over the batch per (t, c) in
// batch order, or, with positions (documents whose positions restart), is bucketed by
// position the same way as dwte by token.
#include <algorithm>
#include <string>

#include "kernels/base/check.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kSortChunk = 512;  // positions per block in the counting sort

// out (B*T, C): one thread per 8-channel chunk of a row.
template <class T>
__global__ void encoder_forward_kernel(T* out, const int32_t* tokens, const T* wte, const T* wpe,
                                       const int32_t* positions, int64_t rows, int64_t T_len, int64_t C,
                                       int64_t Vl, int64_t vocab_start, bool vec) {
  const int64_t chunks_per_row = (C + kChunk - 1) / kChunk;
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= rows * chunks_per_row) return;
  const int64_t row = idx / chunks_per_row;
  const int64_t c0 = (idx % chunks_per_row) * kChunk;
  const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
  const int64_t v = int64_t(tokens[row]) - vocab_start;
  float x[kChunk];
  if (v >= 0 && v < Vl) {
    load_chunk(x, wte + v * C + c0, count, vec);
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) x[i] = 0.0f;
  }
  if (wpe) {
    float p[kChunk];
    load_chunk(p, wpe + (positions ? int64_t(positions[row]) : row % T_len) * C + c0, count, vec);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) x[i] += p[i];
  }
  store_chunk(out + row * C + c0, x, count, vec);
}

// dwpe[t, c] += sum over b of dout[b, t, c].
template <class T>
__global__ void encoder_dwpe_kernel(float* dwpe, const T* dout, int64_t B, int64_t T_len, int64_t C) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= T_len * C) return;
  float acc = 0;
  for (int64_t b = 0; b < B; ++b) acc += to_f32(dout[b * T_len * C + idx]);
  dwpe[idx] += acc;
}

// Local vocabulary row of a position, or -1 when its token is outside this slice.
__device__ __forceinline__ int64_t local_row(const int32_t* tokens, int64_t p, int64_t vocab_start,
                                             int64_t Vl) {
  const int64_t v = int64_t(tokens[p]) - vocab_start;
  return (v >= 0 && v < Vl) ? v : -1;
}

// hist (chunks, Vl): occurrences of each row within each chunk of kSortChunk positions.
__global__ void sort_count_kernel(int32_t* hist, const int32_t* tokens, int64_t N, int64_t vocab_start,
                                  int64_t Vl) {
  const int64_t p = blockIdx.x * int64_t(kSortChunk) + threadIdx.x;
  if (p >= N) return;
  const int64_t v = local_row(tokens, p, vocab_start, Vl);
  if (v >= 0) atomicAdd(&hist[blockIdx.x * Vl + v], 1);
}

// Per row: hist[g, v] becomes the exclusive prefix over chunks; count[v] the total.
__global__ void sort_chunk_prefix_kernel(int32_t* hist, int32_t* count, int64_t chunks, int64_t Vl) {
  const int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (v >= Vl) return;
  int32_t running = 0;
  for (int64_t g = 0; g < chunks; ++g) {
    const int32_t h = hist[g * Vl + v];
    hist[g * Vl + v] = running;
    running += h;
  }
  count[v] = running;
}

// start[v] = exclusive prefix sum of count over rows, and touched[0, n) the rows whose count is
// not 0, ascending, with n in touched[Vl]. One block of 1024 threads, each owning a contiguous
// segment of rows; the segments' totals (positions, touched rows) are scanned in shared memory
// (Hillis-Steele).
constexpr int kScanThreads = 1024;
__global__ void sort_row_starts_kernel(int32_t* start, int32_t* touched, const int32_t* count, int64_t Vl) {
  __shared__ int32_t sums[kScanThreads];
  __shared__ int32_t rows[kScanThreads];
  const int64_t per = (Vl + kScanThreads - 1) / kScanThreads;
  const int64_t begin = threadIdx.x * per;
  const int64_t end = min(Vl, begin + per);
  int32_t local = 0, local_rows = 0;
  for (int64_t v = begin; v < end; ++v) {
    local += count[v];
    local_rows += count[v] != 0;
  }
  sums[threadIdx.x] = local;
  rows[threadIdx.x] = local_rows;
  __syncthreads();
  for (int offset = 1; offset < kScanThreads; offset <<= 1) {
    const int32_t add = threadIdx.x >= offset ? sums[threadIdx.x - offset] : 0;
    const int32_t add_rows = threadIdx.x >= offset ? rows[threadIdx.x - offset] : 0;
    __syncthreads();
    sums[threadIdx.x] += add;
    rows[threadIdx.x] += add_rows;
    __syncthreads();
  }
  int32_t running = sums[threadIdx.x] - local;  // exclusive
  int32_t next_row = rows[threadIdx.x] - local_rows;
  for (int64_t v = begin; v < end; ++v) {
    start[v] = running;
    running += count[v];
    if (count[v] != 0) touched[next_row++] = static_cast<int32_t>(v);
  }
  if (threadIdx.x == kScanThreads - 1) touched[Vl] = rows[threadIdx.x];
}

// sorted[start[v] + hist[g, v] + rank within the chunk] = p, stable in p.
__global__ void sort_scatter_kernel(int32_t* sorted, const int32_t* tokens, const int32_t* hist,
                                    const int32_t* start, int64_t N, int64_t vocab_start, int64_t Vl) {
  __shared__ int64_t rows[kSortChunk];
  const int64_t p = blockIdx.x * int64_t(kSortChunk) + threadIdx.x;
  rows[threadIdx.x] = p < N ? local_row(tokens, p, vocab_start, Vl) : -1;
  __syncthreads();
  const int64_t v = rows[threadIdx.x];
  if (v < 0) return;
  int32_t rank = 0;
  for (int q = 0; q < static_cast<int>(threadIdx.x); ++q) rank += rows[q] == v;
  sorted[start[v] + hist[blockIdx.x * Vl + v] + rank] = static_cast<int32_t>(p);
}

// dwte[v, c] += sum over the bucket of v (positions ascending) of dout[p, c], for each touched
// row v = touched[i]: blocks stride over i (a fixed grid, so the launch does not grow with the
// vocabulary) and blockIdx.y picks the 256-channel slice. A bucket can hold a few percent of the
// batch (frequent tokens), so its loads go kUnroll at a time and are then added in order: the
// same sum, bit for bit, with kUnroll loads in flight instead of one.
constexpr int kDwteUnroll = 8;
constexpr int kDwteBlocks = 2048;  // per slice; about 8 blocks per SM on 132 SMs, twice over
template <class T>
__global__ void encoder_dwte_kernel(float* dwte, const T* dout, const int32_t* sorted, const int32_t* start,
                                    const int32_t* count, const int32_t* touched, int64_t Vl, int64_t C) {
  const int64_t c = blockIdx.y * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  const int32_t n_touched = touched[Vl];
  for (int32_t i = blockIdx.x; i < n_touched; i += gridDim.x) {
    const int64_t v = touched[i];
    const int32_t n = count[v];
    const int32_t* bucket = sorted + start[v];
    float acc = 0;
    int32_t k = 0;
    for (; k + kDwteUnroll <= n; k += kDwteUnroll) {
      float x[kDwteUnroll];
#pragma unroll
      for (int u = 0; u < kDwteUnroll; ++u) x[u] = to_f32(dout[int64_t(bucket[k + u]) * C + c]);
#pragma unroll
      for (int u = 0; u < kDwteUnroll; ++u) acc += x[u];
    }
    for (; k < n; ++k) acc += to_f32(dout[int64_t(bucket[k]) * C + c]);
    dwte[v * C + c] += acc;
  }
}

}  // namespace

void run(const Context& ctx, const EncoderForwardOp& op) {
  const Tensor &out = op.out, &tokens = op.tokens, &wte = op.wte, &wpe = op.wpe;
  const int64_t B = tokens.shape[0], T_len = tokens.shape[1], C = matrix_cols(wte), Vl = matrix_rows(wte);
  const int64_t vocab_start = op.vocab_start;
  const int64_t rows = B * T_len;
  if (rows * C == 0) return;
  const bool vec = C % kChunk == 0 && aligned16(out.data) && aligned16(wte.data) &&
                   (!wpe.defined() || aligned16(wpe.data));
  const int64_t threads = rows * ceil_div(C, kChunk);
  dispatch_float(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    encoder_forward_kernel<T><<<static_cast<unsigned>(ceil_div(threads, kThreads)), kThreads, 0, ctx.stream>>>(
        out.ptr<T>(), tokens.ptr<const int32_t>(), wte.ptr<const T>(),
        wpe.defined() ? wpe.ptr<const T>() : nullptr,
        op.positions.defined() ? op.positions.ptr<const int32_t>() : nullptr, rows, T_len, C, Vl, vocab_start, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

namespace {

// dst[v, c] += sum over the positions p whose key[p] - key_start is v (in [0, rows), others
// skipped) of dout[p, c], in position order: the counting sort above, then one thread per
// (touched row, channel). dwte's keys are the tokens; with positions, dwpe's are the positions.
template <class T>
void scatter_rows(const Context& ctx, float* dst, const T* dout, const int32_t* key, int64_t key_start, int64_t rows,
                  int64_t N, int64_t C) {
  TRAINER_CHECK(N < (int64_t(1) << 31) && rows <= 0x7fffffff && ceil_div(C, kThreads) <= 65535,
                "encoder_backward: sizes out of range");
  const int64_t chunks = ceil_div(N, kSortChunk);
  ScratchCarver plan(nullptr);
  plan.take<int32_t>(chunks * rows);
  plan.take<int32_t>(rows);
  plan.take<int32_t>(rows);
  plan.take<int32_t>(N);
  plan.take<int32_t>(rows + 1);
  ScratchCarver carve(ctx.workspace->get(plan.bytes()));
  int32_t* hist = carve.take<int32_t>(chunks * rows);
  int32_t* count = carve.take<int32_t>(rows);
  int32_t* start = carve.take<int32_t>(rows);
  int32_t* sorted = carve.take<int32_t>(N);
  int32_t* touched = carve.take<int32_t>(rows + 1);  // touched rows, then their number
  TRAINER_CUDA_CHECK(cudaMemsetAsync(hist, 0, sizeof(int32_t) * chunks * rows, ctx.stream));
  sort_count_kernel<<<static_cast<unsigned>(chunks), kSortChunk, 0, ctx.stream>>>(hist, key, N, key_start, rows);
  TRAINER_LAUNCH_CHECK();
  sort_chunk_prefix_kernel<<<static_cast<unsigned>(ceil_div(rows, kThreads)), kThreads, 0, ctx.stream>>>(
      hist, count, chunks, rows);
  TRAINER_LAUNCH_CHECK();
  sort_row_starts_kernel<<<1, kScanThreads, 0, ctx.stream>>>(start, touched, count, rows);
  TRAINER_LAUNCH_CHECK();
  sort_scatter_kernel<<<static_cast<unsigned>(chunks), kSortChunk, 0, ctx.stream>>>(sorted, key, hist, start, N,
                                                                                   key_start, rows);
  TRAINER_LAUNCH_CHECK();
  // At most min(N, rows) rows are touched: no more blocks than that.
  const int64_t blocks = std::min<int64_t>(kDwteBlocks, std::min(N, rows));
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(ceil_div(C, kThreads)));
  encoder_dwte_kernel<T><<<grid, kThreads, 0, ctx.stream>>>(dst, dout, sorted, start, count, touched, rows, C);
  TRAINER_LAUNCH_CHECK();
}

}  // namespace

void run(const Context& ctx, const EncoderBackwardOp& op) {
  const Tensor &dwte = op.dwte, &dwpe = op.dwpe, &dout = op.dout, &tokens = op.tokens;
  const int64_t B = tokens.shape[0], T_len = tokens.shape[1], C = matrix_cols(dwte), Vl = matrix_rows(dwte);
  const int64_t N = B * T_len;
  if (N * C == 0) return;
  dispatch_float(dout.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (dwpe.defined() && op.positions.defined()) {
      scatter_rows<T>(ctx, dwpe.ptr<float>(), dout.ptr<const T>(), op.positions.ptr<const int32_t>(), 0, T_len, N, C);
    } else if (dwpe.defined()) {
      encoder_dwpe_kernel<T><<<static_cast<unsigned>(ceil_div(T_len * C, kThreads)), kThreads, 0, ctx.stream>>>(
          dwpe.ptr<float>(), dout.ptr<const T>(), B, T_len, C);
      TRAINER_LAUNCH_CHECK();
    }
    if (Vl > 0)
      scatter_rows<T>(ctx, dwte.ptr<float>(), dout.ptr<const T>(), tokens.ptr<const int32_t>(), op.vocab_start, Vl, N,
                      C);
  });
}

}  // namespace trainer::cuda
