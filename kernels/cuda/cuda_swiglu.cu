// SwiGLU forward and backward: rows of inp (N, 2F) are [gate (F) | up (F)] (the fused gate/up
// projection's output); out (N, F) = silu(gate) * up, silu(g) = g * sigmoid(g), in f32.
//   dgate = dout * up * s * (1 + g * (1 - s)),  dup = dout * g * s,  s = sigmoid(g)
// Memory-bound streaming kernels over 8-element chunks of a row's F features (16-byte accesses
// when F is a multiple of 8 and every pointer is aligned, see cuda_common.cuh); a thread reads
// its chunks of gate and up before writing, and no output may alias an input (the contract).
// Not fused into the gate/up projection: it is a cuBLASLt matmul, whose epilogues (bias, GELU)
// have no SwiGLU form; a hand-written GEMM to carry one is not worth its cost here, where this
// pass reads (N, 2F) and writes (N, F) once.
#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Chunk c of the N * ceil(F / 8) chunks: row c / per_row, features from (c % per_row) * 8.
template <class T>
__global__ void swiglu_forward_kernel(T* out, const T* inp, int64_t N, int64_t F, bool vec) {
  const int64_t per_row = (F + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < N * per_row;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = c / per_row, i = (c % per_row) * kChunk;
    const int count = static_cast<int>(min(int64_t(kChunk), F - i));
    float g[kChunk], u[kChunk];
    load_chunk(g, inp + n * 2 * F + i, count, vec);
    load_chunk(u, inp + n * 2 * F + F + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) g[j] = g[j] * sigmoid(g[j]) * u[j];
    store_chunk(out + n * F + i, g, count, vec);
  }
}

template <class T>
__global__ void swiglu_backward_kernel(T* dinp, const T* inp, const T* dout, int64_t N, int64_t F, bool vec) {
  const int64_t per_row = (F + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < N * per_row;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = c / per_row, i = (c % per_row) * kChunk;
    const int count = static_cast<int>(min(int64_t(kChunk), F - i));
    float g[kChunk], u[kChunk], d[kChunk], dg[kChunk], du[kChunk];
    load_chunk(g, inp + n * 2 * F + i, count, vec);
    load_chunk(u, inp + n * 2 * F + F + i, count, vec);
    load_chunk(d, dout + n * F + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const float s = sigmoid(g[j]);
      dg[j] = d[j] * u[j] * s * (1.0f + g[j] * (1.0f - s));
      du[j] = d[j] * g[j] * s;
    }
    store_chunk(dinp + n * 2 * F + i, dg, count, vec);
    store_chunk(dinp + n * 2 * F + F + i, du, count, vec);
  }
}

unsigned grid_for(int64_t chunks) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(chunks, kThreads), 1 << 20)));
}

}  // namespace

void run(const Context& ctx, const SwigluForwardOp& op) {
  const int64_t N = matrix_rows(op.inp), F = matrix_cols(op.inp) / 2;
  if (N * F == 0) return;
  const bool vec = F % kChunk == 0 && aligned16(op.out.data) && aligned16(op.inp.data);
  dispatch_float(op.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    swiglu_forward_kernel<T><<<grid_for(N * ceil_div(F, kChunk)), kThreads, 0, ctx.stream>>>(
        op.out.ptr<T>(), op.inp.ptr<const T>(), N, F, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const SwigluBackwardOp& op) {
  const int64_t N = matrix_rows(op.inp), F = matrix_cols(op.inp) / 2;
  if (N * F == 0) return;
  const bool vec = F % kChunk == 0 && aligned16(op.dinp.data) && aligned16(op.inp.data) && aligned16(op.dout.data);
  dispatch_float(op.dinp.dtype, [&](auto tag) {
    using T = decltype(tag);
    swiglu_backward_kernel<T><<<grid_for(N * ceil_div(F, kChunk)), kThreads, 0, ctx.stream>>>(
        op.dinp.ptr<T>(), op.inp.ptr<const T>(), op.dout.ptr<const T>(), N, F, vec);
    TRAINER_LAUNCH_CHECK();
  });
}

}  // namespace trainer::cuda
