// Attention over a KV cache (generation), flash-decoding style. First the new rows' k and v
// heads are copied into the caches (B, Hkv, Tmax, D). Then one block of kWarps warps per
// (batch, head, new row): warp w takes keys w, w + kWarps, ... and keeps an online softmax
// (running max, sum and the weighted value sum, D / 32 features per lane, so D <= 256); the
// warps' partial results are combined in warp order through shared memory. A score is one
// warp reduction of the lanes' partial dot products. Reductions combine in a fixed order and
// the grid depends only on the problem size, so results are deterministic. Generation reads
// every weight once per token; this kernel reads the cache once per head, and stays simple.
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kMaxPerLane = 8;  // D <= 32 * kMaxPerLane
constexpr int kAppendThreads = 256;

// k_cache, v_cache (B, Hkv, Tmax, D) at positions past + t  <-  the k and v heads of row (b, t).
template <class T>
__global__ void append_kernel(T* k_cache, T* v_cache, const T* qkv, int64_t total, int T_len, int H, int Hkv, int D,
                              int64_t t_max, int64_t past) {
  const int64_t W = int64_t(H + 2 * Hkv) * D, C = int64_t(H) * D;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int d = int(i % D);
    const int hk = int((i / D) % Hkv);
    const int64_t row = i / (int64_t(D) * Hkv);  // b * T + t
    const int64_t b = row / T_len, t = row % T_len;
    const int64_t at = ((b * Hkv + hk) * t_max + past + t) * D + d;
    k_cache[at] = qkv[row * W + C + int64_t(hk) * D + d];
    v_cache[at] = qkv[row * W + C + int64_t(Hkv + hk) * D + d];
  }
}

// One block per (b, h, t): blockIdx.x = (b * H + h) * T + t.
template <class T>
__global__ void __launch_bounds__(kWarps * 32) cached_kernel(T* out, const T* k_cache, const T* v_cache, const T* qkv,
                                                              int T_len, int H, int Hkv, int D, int64_t t_max,
                                                              int64_t past, float scale) {
  __shared__ float part_m[kWarps], part_l[kWarps];
  __shared__ float part_acc[kWarps][32 * kMaxPerLane];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t t = blockIdx.x % T_len;
  const int h = int((blockIdx.x / T_len) % H);
  const int64_t b = blockIdx.x / (int64_t(T_len) * H);
  const int64_t W = int64_t(H + 2 * Hkv) * D;
  const int hk = h / (H / Hkv);
  const T* q = qkv + (b * T_len + t) * W + int64_t(h) * D;
  const T* keys = k_cache + (b * Hkv + hk) * t_max * D;
  const T* values = v_cache + (b * Hkv + hk) * t_max * D;

  float qv[kMaxPerLane], acc[kMaxPerLane];
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int d = lane + 32 * i;
    qv[i] = d < D ? to_f32(q[d]) : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const int64_t visible = past + t + 1;
  for (int64_t j = warp; j < visible; j += kWarps) {
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D) dot += qv[i] * to_f32(keys[j * D + d]);
    }
    const float s = warp_reduce(dot, SumOp{}) * scale;
    const float m_new = fmaxf(m, s);
    const float keep = expf(m - m_new), p = expf(s - m_new);
    l = l * keep + p;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D) acc[i] = acc[i] * keep + p * to_f32(values[j * D + d]);
    }
    m = m_new;
  }
  if (lane == 0) {
    part_m[warp] = m;
    part_l[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) part_acc[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  if (warp != 0) return;
  float mx = part_m[0];
  for (int w = 1; w < kWarps; ++w) mx = fmaxf(mx, part_m[w]);
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w) total += part_m[w] == -INFINITY ? 0.0f : part_l[w] * expf(part_m[w] - mx);
  T* y = out + (b * T_len + t) * (int64_t(H) * D) + int64_t(h) * D;
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d >= D) continue;
    float sum = 0.0f;
    for (int w = 0; w < kWarps; ++w)
      if (part_m[w] != -INFINITY) sum += part_acc[w][d] * expf(part_m[w] - mx);
    y[d] = from_f32<T>(sum / total);
  }
}

}  // namespace

void run(const Context& ctx, const AttentionCachedOp& op) {
  const AttentionDims d = attention_dims(op.qkv, op.n_head, op.n_kv_head);
  const int64_t t_max = op.k_cache.shape[2];
  if (d.B * d.T == 0) return;
  TRAINER_CHECK(d.D <= 32 * kMaxPerLane, "attention_cached: head size " + std::to_string(d.D) +
                                             " exceeds the kernel's " + std::to_string(32 * kMaxPerLane));
  const int64_t blocks = d.B * d.H * d.T;
  TRAINER_CHECK(blocks < (int64_t(1) << 31) && d.T < (int64_t(1) << 31) && d.width() < (int64_t(1) << 31),
                "attention_cached: too large (" + op.qkv.shape_str() + ")");
  const int64_t total = d.B * d.T * d.Hkv * d.D;
  const unsigned append_blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(total, kAppendThreads), 65535));
  const float scale = 1.0f / sqrtf(float(d.D));
  dispatch_float(op.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    append_kernel<T><<<append_blocks, kAppendThreads, 0, ctx.stream>>>(
        op.k_cache.ptr<T>(), op.v_cache.ptr<T>(), op.qkv.ptr<const T>(), total, int(d.T), int(d.H), int(d.Hkv),
        int(d.D), t_max, op.past);
    TRAINER_LAUNCH_CHECK();
    cached_kernel<T><<<static_cast<unsigned>(blocks), kWarps * 32, 0, ctx.stream>>>(
        op.out.ptr<T>(), op.k_cache.ptr<const T>(), op.v_cache.ptr<const T>(), op.qkv.ptr<const T>(), int(d.T),
        int(d.H), int(d.Hkv), int(d.D), t_max, op.past, scale);
    TRAINER_LAUNCH_CHECK();
  });
}

}  // namespace trainer::cuda
