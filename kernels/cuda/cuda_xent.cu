// Softmax cross-entropy over the (local slice of the) vocabulary in the three passes of
// kernels/backend.h (row max, sum of exponentials with the target logit, loss) plus the
// gradient. One block per row; every reduction is a fixed-order block reduction. Only the
// first valid_cols columns are read by the forward passes; the gradient is 0 on padding.
// dlogits may alias logits: each thread reads its chunk before writing it.
// xent_fused (tensor degree 1, llm.c's fused classifier) does the same in two passes over a
// row instead of four: every thread keeps a running max and sum of exponentials over its
// columns (rescaled when its max grows); the block takes the max of the maxima, rescales each
// thread's sum to it and sums them (both fixed-order reductions), then, for the gradient, reads
// the row once more and writes it in place. Its sums round differently from the unfused
// kernels' (kTolSums apart), never run to run.
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void xent_max_kernel(float* maxes, const T* logits, int64_t Vl, int64_t valid, bool vec) {
  __shared__ float shared[32];
  const T* row = logits + blockIdx.x * Vl;
  float m = -INFINITY;
  for (int64_t c0 = threadIdx.x * int64_t(kChunk); c0 < valid; c0 += int64_t(blockDim.x) * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), valid - c0));
    float x[kChunk];
    load_chunk(x, row + c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < count) m = fmaxf(m, x[j]);
  }
  m = block_reduce(m, MaxOp{}, -INFINITY, shared);
  if (threadIdx.x == 0) maxes[blockIdx.x] = m;
}

template <class T>
__global__ void xent_sumexp_kernel(float* sumexp, float* target_logit, const T* logits,
                                   const float* maxes, const int32_t* targets, int64_t Vl,
                                   int64_t vocab_start, int64_t valid, bool vec) {
  __shared__ float shared[32];
  const T* row = logits + blockIdx.x * Vl;
  const float m = maxes[blockIdx.x];
  float s = 0;
  for (int64_t c0 = threadIdx.x * int64_t(kChunk); c0 < valid; c0 += int64_t(blockDim.x) * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), valid - c0));
    float x[kChunk];
    load_chunk(x, row + c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < count) s += expf(x[j] - m);
  }
  s = block_reduce(s, SumOp{}, 0.0f, shared);
  if (threadIdx.x == 0) {
    sumexp[blockIdx.x] = s;
    const int64_t col = int64_t(targets[blockIdx.x]) - vocab_start;
    target_logit[blockIdx.x] = (col >= 0 && col < valid) ? to_f32(row[col]) : 0.0f;
  }
}

__global__ void xent_loss_kernel(float* losses, const float* maxes, const float* sumexp,
                                 const float* target_logit, int64_t N) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < N) losses[i] = logf(sumexp[i]) + maxes[i] - target_logit[i];
}

template <class T>
__global__ void xent_backward_kernel(T* dlogits, const T* logits, const float* maxes,
                                     const float* sumexp, const int32_t* targets, int64_t Vl,
                                     int64_t vocab_start, int64_t valid, float dloss, bool vec) {
  const int64_t offset = blockIdx.x * Vl;
  const float m = maxes[blockIdx.x];
  const float inv = dloss / sumexp[blockIdx.x];
  const int64_t target = int64_t(targets[blockIdx.x]) - vocab_start;
  for (int64_t c0 = threadIdx.x * int64_t(kChunk); c0 < Vl; c0 += int64_t(blockDim.x) * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), Vl - c0));
    float x[kChunk];
    load_chunk(x, logits + offset + c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int64_t c = c0 + j;
      const float g = expf(x[j] - m) * inv - (c == target ? dloss : 0.0f);
      x[j] = c < valid ? g : 0.0f;
    }
    store_chunk(dlogits + offset + c0, x, count, vec);
  }
}

template <class T>
__global__ void xent_fused_kernel(float* losses, T* logits, const int32_t* targets, int64_t V, int64_t valid,
                                  bool grad, float dloss, bool vec) {
  __shared__ float shared[32];
  T* row = logits + blockIdx.x * V;
  float m = -INFINITY, s = 0;
  for (int64_t c0 = threadIdx.x * int64_t(kChunk); c0 < valid; c0 += int64_t(blockDim.x) * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), valid - c0));
    float x[kChunk];
    load_chunk(x, row + c0, count, vec);
    float cm = m;
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < count) cm = fmaxf(cm, x[j]);
    s = (m == -INFINITY ? 0.0f : s * expf(m - cm));
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < count) s += expf(x[j] - cm);
    m = cm;
  }
  const float mx = block_reduce(m, MaxOp{}, -INFINITY, shared);
  const float total = block_reduce(m == -INFINITY ? 0.0f : s * expf(m - mx), SumOp{}, 0.0f, shared);
  const int64_t target = targets[blockIdx.x];
  // Every thread reads the target logit before any thread of the block overwrites it.
  const float target_logit = target >= 0 && target < valid ? to_f32(row[target]) : 0.0f;
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(total) + mx - target_logit;
  if (!grad) return;
  __syncthreads();
  const float inv = dloss / total;
  for (int64_t c0 = threadIdx.x * int64_t(kChunk); c0 < V; c0 += int64_t(blockDim.x) * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), V - c0));
    float x[kChunk];
    load_chunk(x, row + c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int64_t c = c0 + j;
      const float g = expf(x[j] - mx) * inv - (c == target ? dloss : 0.0f);
      x[j] = c < valid ? g : 0.0f;
    }
    store_chunk(row + c0, x, count, vec);
  }
}

bool row_vec(const Tensor& t, int64_t Vl) { return aligned16(t.data) && Vl % kChunk == 0; }

}  // namespace

void run(const Context& ctx, const XentMaxOp& op) {
  const int64_t N = matrix_rows(op.logits), Vl = matrix_cols(op.logits);
  if (N == 0) return;
  dispatch_float(op.logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    xent_max_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, ctx.stream>>>(
        op.maxes.ptr<float>(), op.logits.ptr<const T>(), Vl, op.valid_cols, row_vec(op.logits, Vl));
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const XentSumexpOp& op) {
  const int64_t N = matrix_rows(op.logits), Vl = matrix_cols(op.logits);
  if (N == 0) return;
  dispatch_float(op.logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    xent_sumexp_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, ctx.stream>>>(
        op.sumexp.ptr<float>(), op.target_logit.ptr<float>(), op.logits.ptr<const T>(),
        op.maxes.ptr<const float>(), op.targets.ptr<const int32_t>(), Vl, op.vocab_start, op.valid_cols,
        row_vec(op.logits, Vl));
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const XentLossOp& op) {
  const int64_t N = op.losses.numel();
  if (N == 0) return;
  xent_loss_kernel<<<static_cast<unsigned>(ceil_div(N, kThreads)), kThreads, 0, ctx.stream>>>(
      op.losses.ptr<float>(), op.maxes.ptr<const float>(), op.sumexp.ptr<const float>(),
      op.target_logit.ptr<const float>(), N);
  TRAINER_LAUNCH_CHECK();
}

void run(const Context& ctx, const XentBackwardOp& op) {
  const int64_t N = matrix_rows(op.logits), Vl = matrix_cols(op.logits);
  if (N == 0) return;
  const bool vec = row_vec(op.logits, Vl) && aligned16(op.dlogits.data);
  dispatch_float(op.logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    xent_backward_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, ctx.stream>>>(
        op.dlogits.ptr<T>(), op.logits.ptr<const T>(), op.maxes.ptr<const float>(),
        op.sumexp.ptr<const float>(), op.targets.ptr<const int32_t>(), Vl, op.vocab_start, op.valid_cols,
        op.dloss, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const XentFusedOp& op) {
  const int64_t N = matrix_rows(op.logits), V = matrix_cols(op.logits);
  if (N == 0) return;
  dispatch_float(op.logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    xent_fused_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, ctx.stream>>>(
        op.losses.ptr<float>(), op.logits.ptr<T>(), op.targets.ptr<const int32_t>(), V, op.valid_cols,
        op.grad == XentGrad::in_place, op.dloss, row_vec(op.logits, V));
    TRAINER_LAUNCH_CHECK();
  });
}

}  // namespace trainer::cuda
