// LayerNorm (eps 1e-5, biased variance) forward and backward.
// Forward: one warp per row, two passes over the row (mean, then variance about the mean),
// statistics in f32. Backward: a block owns up to kNormBwdMaxRows rows, staged in shared
// memory (cuda_norm_stage.cuh) so each input is read from global memory once; it first writes
// its partial column sums of dweight/dbias (dout * norm, dout) to scratch, then computes dinp
// row by row (one warp per row). add_column_partials (cuda_reduce.cu, one launch for both)
// then adds the partials to dweight/dbias in an order fixed by the block count (32 strided sums,
// then those in row order), so the parameter gradients are deterministic. dinp may
// alias dout (the stage, or the column pass, reads a block's dout before any dinp is written).
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_norm_stage.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr float kEps = 1e-5f;
constexpr int kFwdThreads = 256;  // 8 rows per block

template <class T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp,
                                         const T* weight, const T* bias, int64_t N, int64_t C,
                                         bool vec) {
  const int lane = threadIdx.x % 32;
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  if (row >= N) return;
  const T* x = inp + row * C;
  float sum = 0;
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    float v[kChunk];
    load_chunk(v, x + c0, static_cast<int>(min(int64_t(kChunk), C - c0)), vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) sum += v[j];
  }
  const float m = warp_reduce(sum, SumOp{}) / float(C);
  float var = 0;
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
    float v[kChunk];
    load_chunk(v, x + c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const float d = j < count ? v[j] - m : 0.0f;
      var += d * d;
    }
  }
  const float s = 1.0f / sqrtf(warp_reduce(var, SumOp{}) / float(C) + kEps);
  for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
    const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
    float v[kChunk], w[kChunk], b[kChunk];
    load_chunk(v, x + c0, count, vec);
    load_chunk(w, weight + c0, count, vec);
    load_chunk(b, bias + c0, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = (v[j] - m) * s * w[j] + b[j];
    store_chunk(out + row * C + c0, v, count, vec);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// block_rows rows per block, staged in shared memory when `staged`.
template <class T>
__global__ void layernorm_backward_kernel(T* dinp, float* partial_dw, float* partial_db,
                                          const T* dout, const T* inp, const T* weight,
                                          const float* mean, const float* rstd, int64_t N,
                                          int64_t C, int block_rows, bool staged, bool accumulate, bool vec) {
  extern __shared__ __align__(16) unsigned char s_stage[];
  __shared__ float s_mean[kNormBwdMaxRows];
  __shared__ float s_rstd[kNormBwdMaxRows];
  const int64_t row0 = blockIdx.x * int64_t(block_rows);
  const int rows = static_cast<int>(min(int64_t(block_rows), N - row0));
  if (threadIdx.x < rows) {
    s_mean[threadIdx.x] = mean[row0 + threadIdx.x];
    s_rstd[threadIdx.x] = rstd[row0 + threadIdx.x];
  }
  __syncthreads();
  const NormRows<T> src = norm_stage(s_stage, dout + row0 * C, inp + row0 * C, rows, C, staged, vec);

  // Column partials of dweight and dbias over this block's rows.
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float dw = 0, db = 0;
    for (int r = 0; r < rows; ++r) {
      const int64_t i = r * C + c;
      const float d = to_f32(src.dout[i]);
      dw += d * (to_f32(src.inp[i]) - s_mean[r]) * s_rstd[r];
      db += d;
    }
    partial_dw[blockIdx.x * C + c] = dw;
    partial_db[blockIdx.x * C + c] = db;
  }
  __syncthreads();

  // dinp = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * weight.
  const int lane = threadIdx.x % 32;
  for (int r = threadIdx.x / 32; r < rows; r += blockDim.x / 32) {
    const int64_t row = row0 + r;
    const float m = s_mean[r], s = s_rstd[r];
    const T* d_row = src.dout + r * C;
    const T* x_row = src.inp + r * C;
    float sum_dn = 0, sum_dn_n = 0;
    for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
      const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
      float d[kChunk], x[kChunk], w[kChunk];
      load_chunk(d, d_row + c0, count, vec);
      load_chunk(x, x_row + c0, count, vec);
      load_chunk(w, weight + c0, count, vec);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const float dn = d[j] * w[j];  // 0 past the row end (d is zero-padded)
        sum_dn += dn;
        sum_dn_n += dn * (x[j] - m) * s;
      }
    }
    const float mean_dn = warp_reduce(sum_dn, SumOp{}) / float(C);
    const float mean_dn_n = warp_reduce(sum_dn_n, SumOp{}) / float(C);
    for (int64_t c0 = lane * kChunk; c0 < C; c0 += 32 * kChunk) {
      const int count = static_cast<int>(min(int64_t(kChunk), C - c0));
      float d[kChunk], x[kChunk], w[kChunk], g[kChunk];
      load_chunk(d, d_row + c0, count, vec);
      load_chunk(x, x_row + c0, count, vec);
      load_chunk(w, weight + c0, count, vec);
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        g[j] = s * (d[j] * w[j] - mean_dn - (x[j] - m) * s * mean_dn_n);
      if (accumulate) {
        float old[kChunk];
        load_chunk(old, dinp + row * C + c0, count, vec);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) g[j] += old[j];
      }
      store_chunk(dinp + row * C + c0, g, count, vec);
    }
  }
}

}  // namespace

void run(const Context& ctx, const LayernormForwardOp& op) {
  const Tensor &out = op.out, &mean = op.mean, &rstd = op.rstd, &inp = op.inp, &weight = op.weight, &bias = op.bias;
  const int64_t N = matrix_rows(inp), C = matrix_cols(inp);
  if (N * C == 0) return;
  const bool vec = C % kChunk == 0 && aligned16(out.data) && aligned16(inp.data) &&
                   aligned16(weight.data) && aligned16(bias.data);
  dispatch_float(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t rows_per_block = kFwdThreads / 32;
    layernorm_forward_kernel<T><<<static_cast<unsigned>(ceil_div(N, rows_per_block)), kFwdThreads, 0, ctx.stream>>>(
        out.ptr<T>(), mean.ptr<float>(), rstd.ptr<float>(), inp.ptr<const T>(), weight.ptr<const T>(),
        bias.ptr<const T>(), N, C, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const LayernormBackwardOp& op) {
  const Tensor &dinp = op.dinp, &dweight = op.dweight, &dbias = op.dbias, &dout = op.dout, &inp = op.inp,
               &weight = op.weight, &mean = op.mean, &rstd = op.rstd;
  const int64_t N = matrix_rows(inp), C = matrix_cols(inp);
  if (N * C == 0) return;
  const int64_t elem = int64_t(dtype_size(dinp.dtype));
  const int stage_rows = norm_stage_rows(C, elem);
  const int block_rows = stage_rows > 0 ? stage_rows : kNormBwdMaxRows;
  const size_t stage_bytes = norm_stage_bytes(stage_rows, C, elem);
  const int64_t blocks = ceil_div(N, block_rows);
  TRAINER_CHECK(blocks < (int64_t(1) << 31), "layernorm_backward: too many rows (" + std::to_string(N) + ")");
  ScratchCarver plan(nullptr);
  plan.take<float>(blocks * C);
  plan.take<float>(blocks * C);
  ScratchCarver carve(ctx.workspace->get(plan.bytes()));
  float* partial_dw = carve.take<float>(blocks * C);
  float* partial_db = carve.take<float>(blocks * C);
  const bool vec = C % kChunk == 0 && aligned16(dinp.data) && aligned16(dout.data) &&
                   aligned16(inp.data) && aligned16(weight.data);
  dispatch_float(dinp.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto kernel = layernorm_backward_kernel<T>;
    TRAINER_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(stage_bytes)));
    kernel<<<static_cast<unsigned>(blocks), kNormBwdThreads, stage_bytes, ctx.stream>>>(
        dinp.ptr<T>(), partial_dw, partial_db, dout.ptr<const T>(), inp.ptr<const T>(),
        weight.ptr<const T>(), mean.ptr<const float>(), rstd.ptr<const float>(), N, C, block_rows,
        stage_rows > 0, op.dinp_mode == Accumulate::add, vec);
    TRAINER_LAUNCH_CHECK();
  });
  add_column_partials(ctx, {dweight.ptr<float>(), partial_dw}, {dbias.ptr<float>(), partial_db}, blocks, C);
}

}  // namespace trainer::cuda
