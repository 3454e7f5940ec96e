// Softmax cross-entropy over the (local slice of the) vocabulary in the three passes of
// kernels/backend.h (row max, sum of exponentials with the target logit, loss) plus the
// gradient. One block per row; every reduction is a fixed-order block reduction. Only the
// first valid_cols columns are read by the forward passes; the gradient is 0 on padding.
// dlogits may alias logits: each thread reads its chunk before writing it.
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

struct XentShape {
  int64_t N = 0, Vl = 0;
};

XentShape xent_shape(const Tensor& logits, int64_t valid_cols, const char* what) {
  expect_float(logits, what);
  XentShape s;
  s.Vl = logits.size(-1);
  s.N = s.Vl ? logits.numel() / s.Vl : 0;
  TRAINER_CHECK(valid_cols >= 0 && valid_cols <= s.Vl,
                std::string(what) + ": valid_cols " + std::to_string(valid_cols) + " of " +
                    logits.shape_str());
  return s;
}

void expect_rows(const Tensor& t, DType dtype, int64_t N, const char* what) {
  expect_dtype(t, dtype, what);
  TRAINER_CHECK(t.numel() == N, std::string(what) + " " + t.shape_str() + " needs " +
                                    std::to_string(N) + " elements");
}

bool row_vec(const Tensor& t, int64_t Vl) { return aligned16(t.data) && Vl % kChunk == 0; }

}  // namespace

void xent_max(const Context& ctx, Tensor maxes, Tensor logits, int64_t valid_cols) {
  const XentShape s = xent_shape(logits, valid_cols, "xent_max logits");
  expect_rows(maxes, DType::f32, s.N, "xent_max maxes");
  if (s.N == 0) return;
  dispatch_float(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    xent_max_kernel<T><<<static_cast<unsigned>(s.N), kThreads, 0, ctx.stream>>>(
        maxes.ptr<float>(), logits.ptr<const T>(), s.Vl, valid_cols, row_vec(logits, s.Vl));
    TRAINER_LAUNCH_CHECK();
  });
}

void xent_sumexp(const Context& ctx, Tensor sumexp, Tensor target_logit, Tensor logits,
                 Tensor maxes, Tensor targets, int64_t vocab_start, int64_t valid_cols) {
  const XentShape s = xent_shape(logits, valid_cols, "xent_sumexp logits");
  expect_rows(sumexp, DType::f32, s.N, "xent_sumexp sumexp");
  expect_rows(target_logit, DType::f32, s.N, "xent_sumexp target_logit");
  expect_rows(maxes, DType::f32, s.N, "xent_sumexp maxes");
  expect_rows(targets, DType::i32, s.N, "xent_sumexp targets");
  if (s.N == 0) return;
  dispatch_float(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    xent_sumexp_kernel<T><<<static_cast<unsigned>(s.N), kThreads, 0, ctx.stream>>>(
        sumexp.ptr<float>(), target_logit.ptr<float>(), logits.ptr<const T>(),
        maxes.ptr<const float>(), targets.ptr<const int32_t>(), s.Vl, vocab_start, valid_cols,
        row_vec(logits, s.Vl));
    TRAINER_LAUNCH_CHECK();
  });
}

void xent_loss(const Context& ctx, Tensor losses, Tensor maxes, Tensor sumexp,
               Tensor target_logit) {
  const int64_t N = losses.numel();
  expect_rows(losses, DType::f32, N, "xent_loss losses");
  expect_rows(maxes, DType::f32, N, "xent_loss maxes");
  expect_rows(sumexp, DType::f32, N, "xent_loss sumexp");
  expect_rows(target_logit, DType::f32, N, "xent_loss target_logit");
  if (N == 0) return;
  xent_loss_kernel<<<static_cast<unsigned>(ceil_div(N, kThreads)), kThreads, 0, ctx.stream>>>(
      losses.ptr<float>(), maxes.ptr<const float>(), sumexp.ptr<const float>(),
      target_logit.ptr<const float>(), N);
  TRAINER_LAUNCH_CHECK();
}

void xent_backward(const Context& ctx, Tensor dlogits, Tensor logits, Tensor maxes,
                   Tensor sumexp, Tensor targets, int64_t vocab_start, int64_t valid_cols,
                   float dloss) {
  const XentShape s = xent_shape(logits, valid_cols, "xent_backward logits");
  expect_dtype(dlogits, logits.dtype, "xent_backward dlogits");
  TRAINER_CHECK(dlogits.numel() == s.N * s.Vl && dlogits.size(-1) == s.Vl,
                "xent_backward: dlogits " + dlogits.shape_str() + " vs logits " + logits.shape_str());
  expect_rows(maxes, DType::f32, s.N, "xent_backward maxes");
  expect_rows(sumexp, DType::f32, s.N, "xent_backward sumexp");
  expect_rows(targets, DType::i32, s.N, "xent_backward targets");
  if (s.N == 0) return;
  const bool vec = row_vec(logits, s.Vl) && aligned16(dlogits.data);
  dispatch_float(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    xent_backward_kernel<T><<<static_cast<unsigned>(s.N), kThreads, 0, ctx.stream>>>(
        dlogits.ptr<T>(), logits.ptr<const T>(), maxes.ptr<const float>(),
        sumexp.ptr<const float>(), targets.ptr<const int32_t>(), s.Vl, vocab_start, valid_cols,
        dloss, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

}  // namespace trainer::cuda
