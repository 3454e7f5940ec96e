// Fused AdamW over one contiguous range: fp32 master weights, gradients and moments, one pass,
// writing the compute copy of the weights (bf16 or f32) in the same pass. The update is
// PyTorch's formulation, written as the CPU backend writes it so both agree to rounding:
//   g = grad * grad_scale; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//   p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// Stochastic rounding of the bf16 copy adds 16 random bits below the bf16 mantissa before
// truncating, so the copy rounds up with probability equal to the dropped fraction (unbiased).
// The bits come from a counter-based hash of (seed, offset + element index): no generator
// state, the same element rounds alike in any layout, and reruns are bit-identical.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;

struct AdamWConstants {
  float step_size, inv_bias2_sqrt, decay, b1, b2, grad_scale, eps;
  uint64_t seed, offset;
};

// splitmix64's finalizer over the (seed, index) pair.
__device__ __forceinline__ uint32_t hash_bits(uint64_t seed, uint64_t index) {
  uint64_t z = seed ^ (index * 0x9E3779B97F4A7C15ull);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

__device__ __forceinline__ uint32_t bf16_bits_stochastic(float x, uint32_t random) {
  const uint32_t bits = __float_as_uint(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) return bf16_bits(x);  // inf, nan: no rounding
  return (bits + (random & 0xffffu)) >> 16;
}

template <class TC>
__device__ __forceinline__ void store_copy(TC* p, const float (&x)[kChunk], int count, bool vec,
                                           bool stochastic, const AdamWConstants& k, int64_t i) {
  store_chunk(p, x, count, vec);
}

template <>
__device__ __forceinline__ void store_copy<bf16>(bf16* p, const float (&x)[kChunk], int count,
                                                 bool vec, bool stochastic,
                                                 const AdamWConstants& k, int64_t i) {
  if (!stochastic) {
    store_chunk(p, x, count, vec);
    return;
  }
  uint32_t h[kChunk];
#pragma unroll
  for (int j = 0; j < kChunk; ++j) h[j] = bf16_bits_stochastic(x[j], hash_bits(k.seed, k.offset + i + j));
  if (vec && count == kChunk) {
    uint4 raw;
    raw.x = h[0] | (h[1] << 16);
    raw.y = h[2] | (h[3] << 16);
    raw.z = h[4] | (h[5] << 16);
    raw.w = h[6] | (h[7] << 16);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (j < count) p[j] = __ushort_as_bfloat16(static_cast<unsigned short>(h[j]));
  }
}

// copy == nullptr: no compute copy to write.
template <class TC>
__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, TC* copy,
                             int64_t n, AdamWConstants k, bool vec, bool stochastic) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = c * kChunk;
    const int count = static_cast<int>(min(int64_t(kChunk), n - i));
    float p[kChunk], g[kChunk], mm[kChunk], vv[kChunk];
    load_chunk(p, param + i, count, vec);
    load_chunk(g, grad + i, count, vec);
    load_chunk(mm, m + i, count, vec);
    load_chunk(vv, v + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const float gj = g[j] * k.grad_scale;
      mm[j] = k.b1 * mm[j] + (1.0f - k.b1) * gj;
      vv[j] = k.b2 * vv[j] + (1.0f - k.b2) * gj * gj;
      p[j] = p[j] * k.decay - k.step_size * mm[j] / (sqrtf(vv[j]) * k.inv_bias2_sqrt + k.eps);
    }
    store_chunk(param + i, p, count, vec);
    store_chunk(m + i, mm, count, vec);
    store_chunk(v + i, vv, count, vec);
    if (copy) store_copy(copy + i, p, count, vec, stochastic, k, i);
  }
}

}  // namespace

void adamw(const Context& ctx, const AdamWOp& op, Rounding rounding) {
  const Tensor &param = op.param, &grad = op.grad, &m = op.m, &v = op.v, &param_copy = op.param_copy;
  const AdamWStep& h = op.h;
  const int64_t n = param.numel();
  if (n == 0) return;
  const double t = double(h.step);
  AdamWConstants k;
  k.step_size = float(double(h.lr) / (1.0 - std::pow(double(h.beta1), t)));
  k.inv_bias2_sqrt = float(1.0 / std::sqrt(1.0 - std::pow(double(h.beta2), t)));
  k.decay = 1.0f - h.lr * h.weight_decay;
  k.b1 = h.beta1;
  k.b2 = h.beta2;
  k.grad_scale = h.grad_scale;
  k.eps = h.eps;
  k.seed = h.seed;
  k.offset = h.offset;
  bool vec = aligned16(param.data) && aligned16(grad.data) && aligned16(m.data) && aligned16(v.data);
  if (param_copy.defined()) vec = vec && aligned16(param_copy.data);
  const bool stochastic = rounding == Rounding::stochastic;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(ceil_div(ceil_div(n, kChunk), kThreads), 1 << 20));
  auto launch = [&](auto* copy) {
    adamw_kernel<<<grid, kThreads, 0, ctx.stream>>>(param.ptr<float>(), grad.ptr<const float>(),
                                                    m.ptr<float>(), v.ptr<float>(), copy, n, k,
                                                    vec, stochastic);
    TRAINER_LAUNCH_CHECK();
  };
  if (!param_copy.defined())
    launch(static_cast<float*>(nullptr));
  else
    dispatch_float(param_copy.dtype, [&](auto tag) { launch(param_copy.ptr<decltype(tag)>()); });
}

}  // namespace trainer::cuda
