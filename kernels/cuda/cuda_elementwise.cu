// Element-wise CUDA ops: GELU (tanh approximation) forward and backward, add, scale, fill,
// cast, and the row-broadcast bias add used when no cuBLASLt epilogue fits. All are
// memory-bound streaming kernels over 8-element chunks (16-byte accesses when every pointer
// is aligned, see cuda_common.cuh); outputs may alias inputs because each thread reads its
// chunk before writing it.
#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;

struct GeluForwardFn {
  __device__ float operator()(float x) const {
    const float u = kGeluScale * (x + kGeluCubic * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  }
};

struct GeluBackwardFn {
  __device__ float operator()(float x, float dout) const {
    const float u = kGeluScale * (x + kGeluCubic * x * x * x);
    const float t = tanhf(u);
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
    return (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du) * dout;
  }
};

struct AddFn {
  __device__ float operator()(float a, float b) const { return a + b; }
};

struct ScaleFn {
  float alpha;
  __device__ float operator()(float x) const { return x * alpha; }
};

struct IdentityFn {
  __device__ float operator()(float x) const { return x; }
};

template <class TO, class TA, class F>
__global__ void map1_kernel(TO* out, const TA* a, int64_t n, bool vec, F f) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = c * kChunk;
    const int count = static_cast<int>(min(int64_t(kChunk), n - i));
    float x[kChunk];
    load_chunk(x, a + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) x[j] = f(x[j]);
    store_chunk(out + i, x, count, vec);
  }
}

template <class TO, class TA, class TB, class F>
__global__ void map2_kernel(TO* out, const TA* a, const TB* b, int64_t n, bool vec, F f) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = c * kChunk;
    const int count = static_cast<int>(min(int64_t(kChunk), n - i));
    float x[kChunk], y[kChunk];
    load_chunk(x, a + i, count, vec);
    load_chunk(y, b + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) x[j] = f(x[j], y[j]);
    store_chunk(out + i, x, count, vec);
  }
}

template <class T>
__global__ void fill_kernel(T* x, int64_t n, float value) {
  const T v = from_f32<T>(value);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = v;
}

template <class TO, class TB>
__global__ void bias_add_rows_kernel(TO* out, const TB* bias, int64_t M, int64_t N) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < M * N;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<TO>(to_f32(out[i]) + to_f32(bias[i % N]));
}

int grid_for(int64_t items) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(items, kThreads), 1 << 20)));
}

template <class TO, class TA, class F>
void launch_map1(const Context& ctx, Tensor out, Tensor a, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const bool vec = aligned16(out.data) && aligned16(a.data);
  map1_kernel<<<grid_for(ceil_div(n, kChunk)), kThreads, 0, ctx.stream>>>(
      out.ptr<TO>(), a.ptr<const TA>(), n, vec, f);
  TRAINER_LAUNCH_CHECK();
}

template <class TO, class TA, class TB, class F>
void launch_map2(const Context& ctx, Tensor out, Tensor a, Tensor b, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const bool vec = aligned16(out.data) && aligned16(a.data) && aligned16(b.data);
  map2_kernel<<<grid_for(ceil_div(n, kChunk)), kThreads, 0, ctx.stream>>>(
      out.ptr<TO>(), a.ptr<const TA>(), b.ptr<const TB>(), n, vec, f);
  TRAINER_LAUNCH_CHECK();
}

}  // namespace

void run(const Context& ctx, const GeluForwardOp& op) {
  dispatch_float(op.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_map1<T, T>(ctx, op.out, op.inp, GeluForwardFn{});
  });
}

void run(const Context& ctx, const GeluBackwardOp& op) {
  dispatch_float(op.dinp.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_map2<T, T, T>(ctx, op.dinp, op.inp, op.dout, GeluBackwardFn{});
  });
}

void run(const Context& ctx, const AddOp& op) {
  dispatch_float(op.out.dtype, [&](auto to) {
    dispatch_float(op.a.dtype, [&](auto ta) {
      dispatch_float(op.b.dtype, [&](auto tb) {
        launch_map2<decltype(to), decltype(ta), decltype(tb)>(ctx, op.out, op.a, op.b, AddFn{});
      });
    });
  });
}

void run(const Context& ctx, const ScaleOp& op) {
  dispatch_float(op.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_map1<T, T>(ctx, op.x, op.x, ScaleFn{op.alpha});
  });
}

void run(const Context& ctx, const FillOp& op) {
  const int64_t n = op.x.numel();
  if (n == 0) return;
  dispatch_float(op.x.dtype, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<grid_for(n), kThreads, 0, ctx.stream>>>(op.x.ptr<T>(), n, op.value);
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const CastOp& op) {
  dispatch_float(op.dst.dtype, [&](auto to) {
    dispatch_float(op.src.dtype, [&](auto from) {
      launch_map1<decltype(to), decltype(from)>(ctx, op.dst, op.src, IdentityFn{});
    });
  });
}

void bias_add_rows(const Context& ctx, Tensor out, Tensor bias) {
  const int64_t M = matrix_rows(out), N = matrix_cols(out);
  if (M * N == 0) return;
  dispatch_float(out.dtype, [&](auto to) {
    dispatch_float(bias.dtype, [&](auto tb) {
      using TO = decltype(to);
      using TB = decltype(tb);
      bias_add_rows_kernel<TO, TB><<<grid_for(M * N), kThreads, 0, ctx.stream>>>(
          out.ptr<TO>(), bias.ptr<const TB>(), M, N);
      TRAINER_LAUNCH_CHECK();
    });
  });
}

}  // namespace trainer::cuda
