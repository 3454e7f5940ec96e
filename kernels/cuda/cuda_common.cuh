// Device helpers shared by the CUDA kernels: dtype conversion, 8-element chunks moved with
// 16-byte accesses, warp and block reductions, and dtype dispatch on the host.
// Invariants: block reductions combine warps in a fixed order and every lane of a warp
// reduction ends with the same bits (IEEE addition is commutative), so reductions are
// deterministic. Kernels using block_reduce need blockDim.x to be a multiple of 32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "kernels/base/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/tensor.h"

namespace trainer::cuda {

using bf16 = __nv_bfloat16;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float x) {
  return __float2bfloat16_rn(x);
}

// ---- 8-element chunks ----
// Element-wise kernels work on chunks of kChunk consecutive elements. When the chunk is whole
// and `vec` says every pointer of the launch is 16-byte aligned, it moves with 16-byte
// accesses (two for f32, one for bf16); otherwise element by element.
constexpr int kChunk = 8;

__device__ __forceinline__ void load_chunk(float (&x)[kChunk], const float* p, int count,
                                           bool vec) {
  if (vec && count == kChunk) {
    const float4 a = reinterpret_cast<const float4*>(p)[0];
    const float4 b = reinterpret_cast<const float4*>(p)[1];
    x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
    x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) x[i] = i < count ? p[i] : 0.0f;
  }
}

__device__ __forceinline__ void load_chunk(float (&x)[kChunk], const bf16* p, int count,
                                           bool vec) {
  if (vec && count == kChunk) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      x[2 * i] = __uint_as_float(words[i] << 16);
      x[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) x[i] = i < count ? __bfloat162float(p[i]) : 0.0f;
  }
}

__device__ __forceinline__ void store_chunk(float* p, const float (&x)[kChunk], int count,
                                            bool vec) {
  if (vec && count == kChunk) {
    reinterpret_cast<float4*>(p)[0] = make_float4(x[0], x[1], x[2], x[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(x[4], x[5], x[6], x[7]);
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i)
      if (i < count) p[i] = x[i];
  }
}

__device__ __forceinline__ uint32_t bf16_bits(float x) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(x)));
}

__device__ __forceinline__ void store_chunk(bf16* p, const float (&x)[kChunk], int count,
                                            bool vec) {
  if (vec && count == kChunk) {
    uint4 raw;
    raw.x = bf16_bits(x[0]) | (bf16_bits(x[1]) << 16);
    raw.y = bf16_bits(x[2]) | (bf16_bits(x[3]) << 16);
    raw.z = bf16_bits(x[4]) | (bf16_bits(x[5]) << 16);
    raw.w = bf16_bits(x[6]) | (bf16_bits(x[7]) << 16);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i)
      if (i < count) p[i] = __float2bfloat16_rn(x[i]);
  }
}

// ---- reductions ----
struct SumOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduces v over the block; every thread gets the result. `shared` holds >= 32 elements.
// `identity` pads the missing warps (0 for sums, -inf for max).
template <class T, class Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T identity, T* shared) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  v = warp_reduce(v, op);
  __syncthreads();  // a previous call may still be reading `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = lane < warps ? shared[lane] : identity;
  return warp_reduce(r, op);
}

// ---- multi-tensor tables ----
// The last of `count` pieces whose `first` (non-decreasing over the pieces: the first tile or
// block each piece owns in a launch) is at or before `at`: the piece that holds tile or block
// `at`, when pieces that own none share `first` with the piece after them.
template <class Piece, class Index>
__device__ __forceinline__ int last_piece_at(const Piece* pieces, int count, Index Piece::*first, int64_t at) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (int64_t(pieces[mid].*first) <= at)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// ---- host-side dtype dispatch ----
// Calls f(float{}) or f(bf16{}) for a floating-point dtype; use with a generic lambda.
template <class F>
void dispatch_float(DType dtype, F&& f) {
  if (dtype == DType::f32) {
    f(float{});
  } else if (dtype == DType::bf16) {
    f(bf16{});
  } else {
    TRAINER_CHECK(false, std::string("expected an f32 or bf16 tensor, got ") + dtype_name(dtype));
  }
}

}  // namespace trainer::cuda
