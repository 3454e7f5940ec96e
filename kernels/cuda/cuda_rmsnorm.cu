// RMSNorm (Llama) forward and backward, over the rows of a matrix (rmsnorm_*) and over the q
// and k heads of a qkv tensor (head_rmsnorm_*, qk-norm; v heads are copied).
//   y = x * r * w,  r = 1 / sqrt(mean(x^2) + eps)
//   dx = r * (w*dy - x * r^2 * mean(w*dy*x)),  dw += dy * x * r
// A "vector" is what one r normalizes: a row (C features) or one head of a row (D features).
// Forward: one warp per vector, statistics in f32. Backward: a block owns a few rows (for rows,
// staged in shared memory by cuda_norm_stage.cuh, so each input is read from global memory
// once; for heads kBwdRows, read in place); it first writes its partial column sums of the
// weight gradients (over its rows, and for heads over the heads of each kind in head order) to
// scratch, then computes dinp vector by vector (one warp each). add_column_partials
// (cuda_reduce.cu; the head norm's q and k in one launch) adds the partials to the weight
// gradients in an order fixed by the block count (32 strided sums, then those in row order):
// deterministic, no atomics, as in cuda_layernorm.cu. A block reads its dout (stage or column
// pass) before any dinp of it is written and blocks own disjoint rows, so dinp may alias dout.
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_norm_stage.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kFwdThreads = 256;  // 8 vectors per block
constexpr int kBwdRows = 32;  // rows per block of the head backward
constexpr int kBwdThreads = 256;

// ---- one vector, by one warp (every lane returns the same r) ----
template <class T>
__device__ float rms_vector_forward(T* y, const T* x, const T* w, int64_t C, float eps, bool vec) {
  const int lane = threadIdx.x % 32;
  float ss = 0;
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    float v[kChunk];
    load_chunk(v, x + c0, static_cast<int>(min(int64_t(kChunk), C - c0)), vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) ss += v[j] * v[j];  // zero past the end
  }
  const float r = 1.0f / sqrtf(warp_reduce(ss, SumOp{}) / float(C) + eps);
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
    float v[kChunk], g[kChunk];
    load_chunk(v, x + c0, count, vec);
    load_chunk(g, w + c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = v[j] * r * g[j];
    store_chunk(y + c0, v, count, vec);
  }
  return r;
}

// Chunk c0.. of dy, x and w.
template <class T>
__device__ __forceinline__ void load_three(float (&d)[kChunk], float (&v)[kChunk], float (&g)[kChunk], const T* dy,
                                           const T* x, const T* w, int64_t c0, int count, bool vec) {
  load_chunk(d, dy + c0, count, vec);
  load_chunk(v, x + c0, count, vec);
  load_chunk(g, w + c0, count, vec);
}

template <class T>
__device__ void rms_vector_backward(T* dx, const T* dy, const T* x, const T* w, float r, int64_t C,
                                    bool accumulate, bool vec) {
  const int lane = threadIdx.x % 32;
  float dot = 0;
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    float d[kChunk], v[kChunk], g[kChunk];
    load_three(d, v, g, dy, x, w, c0, static_cast<int>(min(int64_t(kChunk), C - c0)), vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) dot += g[j] * d[j] * v[j];  // zero past the end
  }
  const float k = r * r * warp_reduce(dot, SumOp{}) / float(C);
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
    float d[kChunk], v[kChunk], g[kChunk];
    load_three(d, v, g, dy, x, w, c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) d[j] = r * (g[j] * d[j] - v[j] * k);
    if (accumulate) {
      float old[kChunk];
      load_chunk(old, dx + c0, count, vec);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) d[j] += old[j];
    }
    store_chunk(dx + c0, d, count, vec);
  }
}

// C features from x to y (the v heads), by one warp.
template <class T>
__device__ void copy_vector(T* y, const T* x, int64_t C, bool vec) {
  const int lane = threadIdx.x % 32;
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
    float v[kChunk];
    load_chunk(v, x + c0, count, vec);
    store_chunk(y + c0, v, count, vec);
  }
}

// ---- rows ----
// out (N, C), rstd (N), inp (N, C), weight (C).
template <class T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const T* weight, int64_t N, int64_t C,
                                       float eps, bool vec) {
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  if (row >= N) return;  // warp-uniform
  const float r = rms_vector_forward(out + row * C, inp + row * C, weight, C, eps, vec);
  if (threadIdx.x % 32 == 0) rstd[row] = r;
}

// partial (blocks, C): this block's sum over its rows of dout * inp * rstd. block_rows rows per
// block, staged in shared memory when `staged`.
template <class T>
__global__ void rmsnorm_backward_kernel(T* dinp, float* partial, const T* dout, const T* inp, const T* weight,
                                        const float* rstd, int64_t N, int64_t C, int block_rows, bool staged,
                                        bool accumulate, bool vec) {
  extern __shared__ __align__(16) unsigned char s_stage[];
  __shared__ float s_rstd[kNormBwdMaxRows];
  const int64_t row0 = blockIdx.x * int64_t(block_rows);
  const int rows = static_cast<int>(min(int64_t(block_rows), N - row0));
  if (threadIdx.x < rows) s_rstd[threadIdx.x] = rstd[row0 + threadIdx.x];
  __syncthreads();
  const NormRows<T> src = norm_stage(s_stage, dout + row0 * C, inp + row0 * C, rows, C, staged, vec);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float dw = 0;
    for (int r = 0; r < rows; ++r) {
      const int64_t i = r * C + c;
      dw += to_f32(src.dout[i]) * to_f32(src.inp[i]) * s_rstd[r];
    }
    partial[blockIdx.x * C + c] = dw;
  }
  __syncthreads();
  for (int r = threadIdx.x / 32; r < rows; r += blockDim.x / 32)
    rms_vector_backward(dinp + (row0 + r) * C, src.dout + r * C, src.inp + r * C, weight, s_rstd[r], C, accumulate,
                        vec);
}

// ---- heads of a qkv tensor: rows of W = (H + 2*Hkv) * D, rstd (rows, H + Hkv) ----
struct HeadShape {
  int64_t rows, H, Hkv, D;
  __host__ __device__ int64_t heads() const { return H + 2 * Hkv; }
  __host__ __device__ int64_t normed() const { return H + Hkv; }
  __host__ __device__ int64_t width() const { return heads() * D; }
};

// One warp per (row, head); the v heads are copied.
template <class T>
__global__ void head_rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const T* q_weight, const T* k_weight,
                                            HeadShape s, float eps, bool vec) {
  const int64_t item = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  if (item >= s.rows * s.heads()) return;  // warp-uniform
  const int64_t row = item / s.heads(), h = item % s.heads();
  const int64_t at = row * s.width() + h * s.D;
  if (h >= s.normed()) {
    copy_vector(out + at, inp + at, s.D, vec);
    return;
  }
  const float r = rms_vector_forward(out + at, inp + at, h < s.H ? q_weight : k_weight, s.D, eps, vec);
  if (threadIdx.x % 32 == 0) rstd[row * s.normed() + h] = r;
}

// partial_q, partial_k (blocks, D): this block's sums over its rows, and within a row over the
// q (k) heads in order, of dout * inp * rstd.
template <class T>
__global__ void head_rmsnorm_backward_kernel(T* dinp, float* partial_q, float* partial_k, const T* dout, const T* inp,
                                             const T* q_weight, const T* k_weight, const float* rstd, HeadShape s,
                                             bool vec) {
  const int64_t row0 = blockIdx.x * int64_t(kBwdRows);
  const int rows = static_cast<int>(min(int64_t(kBwdRows), s.rows - row0));
  const int64_t W = s.width();
  for (int64_t i = threadIdx.x; i < 2 * s.D; i += blockDim.x) {
    const bool q = i < s.D;
    const int64_t c = i % s.D, h0 = q ? 0 : s.H, h1 = q ? s.H : s.normed();
    float dw = 0;
    for (int r = 0; r < rows; ++r) {
      const int64_t row = row0 + r;
      for (int64_t h = h0; h < h1; ++h) {
        const int64_t e = row * W + h * s.D + c;
        dw += to_f32(dout[e]) * to_f32(inp[e]) * rstd[row * s.normed() + h];
      }
    }
    (q ? partial_q : partial_k)[blockIdx.x * s.D + c] = dw;
  }
  __syncthreads();
  for (int64_t v = threadIdx.x / 32; v < rows * s.heads(); v += blockDim.x / 32) {
    const int64_t row = row0 + v / s.heads(), h = v % s.heads();
    const int64_t at = row * W + h * s.D;
    if (h >= s.normed())
      copy_vector(dinp + at, dout + at, s.D, vec);
    else
      rms_vector_backward(dinp + at, dout + at, inp + at, h < s.H ? q_weight : k_weight, rstd[row * s.normed() + h],
                          s.D, false, vec);
  }
}

unsigned warp_blocks(int64_t items) {
  const int64_t blocks = ceil_div(items, kFwdThreads / 32);
  TRAINER_CHECK(blocks < (int64_t(1) << 31), "rmsnorm: too many rows (" + std::to_string(items) + " vectors)");
  return static_cast<unsigned>(blocks);
}

HeadShape head_shape(const Tensor& inp, int n_head, int n_kv_head) {
  const AttentionDims d = attention_dims(inp, n_head, n_kv_head);
  return {d.B * d.T, d.H, d.Hkv, d.D};
}

}  // namespace

void run(const Context& ctx, const RmsnormForwardOp& op) {
  const int64_t N = matrix_rows(op.inp), C = matrix_cols(op.inp);
  if (N * C == 0) return;
  const bool vec = C % kChunk == 0 && aligned16(op.out.data) && aligned16(op.inp.data) && aligned16(op.weight.data);
  dispatch_float(op.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    rmsnorm_forward_kernel<T><<<warp_blocks(N), kFwdThreads, 0, ctx.stream>>>(
        op.out.ptr<T>(), op.rstd.ptr<float>(), op.inp.ptr<const T>(), op.weight.ptr<const T>(), N, C, op.eps, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const RmsnormBackwardOp& op) {
  const int64_t N = matrix_rows(op.inp), C = matrix_cols(op.inp);
  if (N * C == 0) return;
  const int64_t elem = int64_t(dtype_size(op.dinp.dtype));
  const int stage_rows = norm_stage_rows(C, elem);
  const int block_rows = stage_rows > 0 ? stage_rows : kNormBwdMaxRows;
  const size_t stage_bytes = norm_stage_bytes(stage_rows, C, elem);
  const int64_t blocks = ceil_div(N, block_rows);
  TRAINER_CHECK(blocks < (int64_t(1) << 31), "rmsnorm_backward: too many rows (" + std::to_string(N) + ")");
  float* partial = static_cast<float*>(ctx.workspace->get(sizeof(float) * blocks * C));
  const bool vec = C % kChunk == 0 && aligned16(op.dinp.data) && aligned16(op.dout.data) &&
                   aligned16(op.inp.data) && aligned16(op.weight.data);
  dispatch_float(op.dinp.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto kernel = rmsnorm_backward_kernel<T>;
    TRAINER_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(stage_bytes)));
    kernel<<<static_cast<unsigned>(blocks), kNormBwdThreads, stage_bytes, ctx.stream>>>(
        op.dinp.ptr<T>(), partial, op.dout.ptr<const T>(), op.inp.ptr<const T>(), op.weight.ptr<const T>(),
        op.rstd.ptr<const float>(), N, C, block_rows, stage_rows > 0, op.dinp_mode == Accumulate::add, vec);
    TRAINER_LAUNCH_CHECK();
  });
  add_column_partials(ctx, {op.dweight.ptr<float>(), partial}, blocks, C);
}

void run(const Context& ctx, const HeadRmsnormForwardOp& op) {
  const HeadShape s = head_shape(op.inp, op.n_head, op.n_kv_head);
  if (s.rows * s.width() == 0) return;
  const bool vec = s.D % kChunk == 0 && aligned16(op.out.data) && aligned16(op.inp.data) &&
                   aligned16(op.q_weight.data) && aligned16(op.k_weight.data);
  dispatch_float(op.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    head_rmsnorm_forward_kernel<T><<<warp_blocks(s.rows * s.heads()), kFwdThreads, 0, ctx.stream>>>(
        op.out.ptr<T>(), op.rstd.ptr<float>(), op.inp.ptr<const T>(), op.q_weight.ptr<const T>(),
        op.k_weight.ptr<const T>(), s, op.eps, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const HeadRmsnormBackwardOp& op) {
  const HeadShape s = head_shape(op.inp, op.n_head, op.n_kv_head);
  if (s.rows * s.width() == 0) return;
  const int64_t blocks = ceil_div(s.rows, kBwdRows);
  TRAINER_CHECK(blocks < (int64_t(1) << 31), "head_rmsnorm_backward: too many rows (" + std::to_string(s.rows) + ")");
  ScratchCarver plan(nullptr);
  plan.take<float>(blocks * s.D);
  plan.take<float>(blocks * s.D);
  ScratchCarver carve(ctx.workspace->get(plan.bytes()));
  float* partial_q = carve.take<float>(blocks * s.D);
  float* partial_k = carve.take<float>(blocks * s.D);
  const bool vec = s.D % kChunk == 0 && aligned16(op.dinp.data) && aligned16(op.dout.data) &&
                   aligned16(op.inp.data) && aligned16(op.q_weight.data) && aligned16(op.k_weight.data);
  dispatch_float(op.dinp.dtype, [&](auto tag) {
    using T = decltype(tag);
    head_rmsnorm_backward_kernel<T><<<static_cast<unsigned>(blocks), kBwdThreads, 0, ctx.stream>>>(
        op.dinp.ptr<T>(), partial_q, partial_k, op.dout.ptr<const T>(), op.inp.ptr<const T>(),
        op.q_weight.ptr<const T>(), op.k_weight.ptr<const T>(), op.rstd.ptr<const float>(), s, vec);
    TRAINER_LAUNCH_CHECK();
  });
  add_column_partials(ctx, {op.dq_weight.ptr<float>(), partial_q}, {op.dk_weight.ptr<float>(), partial_k}, blocks, s.D);
}

}  // namespace trainer::cuda
