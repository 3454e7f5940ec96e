// Ring attention's block ops (see backend_attention_block_ops.h): plain kernels, one warp per
// row, that follow the CPU reference's order; correctness first. The tiled, tensor-core form
// of the causal kernels is future work (a row here reads its keys from global memory).
// Forward: a warp owns a query row; lanes take 32 keys at a time (online softmax), the output's
// features lane + 32 i; the block's (out, lse) then merge into the running ones. Backward: a
// warp owns a query row for dQ (keys 32 at a time), another kernel a key row of a k/v head for
// dK and dV (the group's query heads in order, queries 32 at a time). Every sum has a fixed
// order and no atomics, so results are the same run to run.
#include <cmath>
#include <string>

#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kWarps = 4;  // rows per block
constexpr unsigned kFull = 0xffffffffu;
constexpr int kMaxDpl = 8;  // features per lane: head size up to 256

struct BlockShape {
  int B, Tq, Tk, H, Hkv, D;
  __host__ __device__ int W() const { return (H + 2 * Hkv) * D; }
  __host__ __device__ int Wkv() const { return 2 * Hkv * D; }
  __host__ __device__ int C() const { return H * D; }
  __host__ __device__ int group() const { return H / Hkv; }
};

__device__ __forceinline__ bool seen(int kp, int qp, const int* q_doc, int64_t row) {
  return kp <= qp && (!q_doc || kp >= q_doc[row]);
}

// grid (ceil(Tq / kWarps), B * H).
template <class T>
__global__ void block_forward_kernel(float* out, float* lse, const T* qkv, const T* kv, const int* q_pos,
                                     const int* k_pos, const int* q_doc, BlockShape s, float scale) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.y / s.H, h = blockIdx.y % s.H, i = blockIdx.x * kWarps + warp;
  if (i >= s.Tq) return;  // warp-uniform
  const int64_t row = int64_t(b) * s.Tq + i;
  const int koff = (h / s.group()) * s.D, voff = s.Hkv * s.D + koff;
  const T* q = qkv + row * s.W() + int64_t(h) * s.D;
  const int qp = q_pos[row];
  float m = -INFINITY, l = 0.0f, o[kMaxDpl];
#pragma unroll
  for (int k = 0; k < kMaxDpl; ++k) o[k] = 0.0f;
  for (int k0 = 0; k0 < s.Tk; k0 += 32) {
    const int key = k0 + lane;
    const bool vis = key < s.Tk && seen(k_pos[int64_t(b) * s.Tk + key], qp, q_doc, row);
    float sc = -INFINITY;
    if (vis) {
      const T* kr = kv + (int64_t(b) * s.Tk + key) * s.Wkv() + koff;
      float acc = 0.0f;
      for (int d = 0; d < s.D; ++d) acc += to_f32(q[d]) * to_f32(kr[d]);
      sc = acc * scale;
    }
    const float m_tile = warp_reduce(sc, MaxOp{});
    if (m_tile == -INFINITY) continue;  // no visible key in this tile (warp-uniform)
    const float m_new = fmaxf(m, m_tile);
    const float p = vis ? expf(sc - m_new) : 0.0f;
    const float corr = expf(m - m_new);
    l = l * corr + warp_reduce(p, SumOp{});
    m = m_new;
#pragma unroll
    for (int k = 0; k < kMaxDpl; ++k) o[k] *= corr;
    for (int j = 0; j < 32 && k0 + j < s.Tk; ++j) {
      const float pj = __shfl_sync(kFull, p, j);
      if (pj == 0.0f) continue;  // uniform: every lane reads the same pj
      const T* vr = kv + (int64_t(b) * s.Tk + k0 + j) * s.Wkv() + voff;
#pragma unroll
      for (int k = 0; k < kMaxDpl; ++k) {
        const int d = lane + 32 * k;
        if (d < s.D) o[k] += pj * to_f32(vr[d]);
      }
    }
  }
  if (m == -INFINITY) return;  // no key of this block: keep what the row held
  const float l_blk = m + logf(l);
  float* lr = lse + (int64_t(b) * s.H + h) * s.Tq + i;
  const float old = *lr;
  const bool empty = old == -INFINITY;
  const float top = empty ? l_blk : fmaxf(old, l_blk);
  const float l_new = empty ? l_blk : top + logf(expf(old - top) + expf(l_blk - top));
  const float keep = empty ? 0.0f : expf(old - l_new), take = expf(l_blk - l_new) / l;
  float* dst = out + row * s.C() + int64_t(h) * s.D;
#pragma unroll
  for (int k = 0; k < kMaxDpl; ++k) {
    const int d = lane + 32 * k;
    if (d < s.D) dst[d] = dst[d] * keep + o[k] * take;
  }
  __syncwarp();
  if (lane == 0) *lr = l_new;
}

// dvec of a row: sum over the head's features of dout * out, on every lane.
template <class T>
__device__ __forceinline__ float row_dvec(const T* dO, const float* O, int D, int lane) {
  float acc = 0.0f;
  for (int d = lane; d < D; d += 32) acc += to_f32(dO[d]) * O[d];
  return warp_reduce(acc, SumOp{});
}

// grid (ceil(Tq / kWarps), B * H): dq of a query row.
template <class T>
__global__ void block_dq_kernel(float* dq, const T* dout, const T* qkv, const T* kv, const float* out, const float* lse,
                                const int* q_pos, const int* k_pos, const int* q_doc, BlockShape s, float scale) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.y / s.H, h = blockIdx.y % s.H, i = blockIdx.x * kWarps + warp;
  if (i >= s.Tq) return;
  const int64_t row = int64_t(b) * s.Tq + i;
  const int koff = (h / s.group()) * s.D, voff = s.Hkv * s.D + koff;
  const T* q = qkv + row * s.W() + int64_t(h) * s.D;
  const T* dO = dout + row * s.C() + int64_t(h) * s.D;
  const float l = lse[(int64_t(b) * s.H + h) * s.Tq + i];
  const float dvec = row_dvec(dO, out + row * s.C() + int64_t(h) * s.D, s.D, lane);
  const int qp = q_pos[row];
  float acc[kMaxDpl];
#pragma unroll
  for (int k = 0; k < kMaxDpl; ++k) acc[k] = 0.0f;
  for (int k0 = 0; k0 < s.Tk; k0 += 32) {
    const int key = k0 + lane;
    float ds = 0.0f;
    if (key < s.Tk && seen(k_pos[int64_t(b) * s.Tk + key], qp, q_doc, row)) {
      const T* kr = kv + (int64_t(b) * s.Tk + key) * s.Wkv() + koff;
      const T* vr = kv + (int64_t(b) * s.Tk + key) * s.Wkv() + voff;
      float dot = 0.0f, dp = 0.0f;
      for (int d = 0; d < s.D; ++d) {
        dot += to_f32(q[d]) * to_f32(kr[d]);
        dp += to_f32(dO[d]) * to_f32(vr[d]);
      }
      const float p = expf(dot * scale - l);
      ds = p * (dp - dvec) * scale;
    }
    for (int j = 0; j < 32 && k0 + j < s.Tk; ++j) {
      const float dsj = __shfl_sync(kFull, ds, j);
      if (dsj == 0.0f) continue;
      const T* kr = kv + (int64_t(b) * s.Tk + k0 + j) * s.Wkv() + koff;
#pragma unroll
      for (int k = 0; k < kMaxDpl; ++k) {
        const int d = lane + 32 * k;
        if (d < s.D) acc[k] += dsj * to_f32(kr[d]);
      }
    }
  }
  float* dst = dq + row * s.C() + int64_t(h) * s.D;
#pragma unroll
  for (int k = 0; k < kMaxDpl; ++k) {
    const int d = lane + 32 * k;
    if (d < s.D) dst[d] += acc[k];
  }
}

// grid (ceil(Tk / kWarps), B * Hkv): dK and dV of a key row, over the group's query heads.
template <class T>
__global__ void block_dkv_kernel(float* dkv, const T* dout, const T* qkv, const T* kv, const float* out,
                                 const float* lse, const int* q_pos, const int* k_pos, const int* q_doc, BlockShape s,
                                 float scale) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.y / s.Hkv, hk = blockIdx.y % s.Hkv, j = blockIdx.x * kWarps + warp;
  if (j >= s.Tk) return;
  const int64_t krow = int64_t(b) * s.Tk + j;
  const T* kr = kv + krow * s.Wkv() + int64_t(hk) * s.D;
  const T* vr = kv + krow * s.Wkv() + int64_t(s.Hkv + hk) * s.D;
  const int kp = k_pos[krow];
  float dk[kMaxDpl], dv[kMaxDpl];
#pragma unroll
  for (int k = 0; k < kMaxDpl; ++k) dk[k] = dv[k] = 0.0f;
  for (int h = hk * s.group(); h < (hk + 1) * s.group(); ++h)
    for (int q0 = 0; q0 < s.Tq; q0 += 32) {
      const int i = q0 + lane;
      const int64_t row = int64_t(b) * s.Tq + i;
      float p = 0.0f, ds = 0.0f;
      if (i < s.Tq && seen(kp, q_pos[row], q_doc, row)) {
        const T* q = qkv + row * s.W() + int64_t(h) * s.D;
        const T* dO = dout + row * s.C() + int64_t(h) * s.D;
        const float* O = out + row * s.C() + int64_t(h) * s.D;
        float dot = 0.0f, dp = 0.0f, dvec = 0.0f;
        for (int d = 0; d < s.D; ++d) {
          dot += to_f32(q[d]) * to_f32(kr[d]);
          dp += to_f32(dO[d]) * to_f32(vr[d]);
          dvec += to_f32(dO[d]) * O[d];
        }
        p = expf(dot * scale - lse[(int64_t(b) * s.H + h) * s.Tq + i]);
        ds = p * (dp - dvec) * scale;
      }
      for (int r = 0; r < 32 && q0 + r < s.Tq; ++r) {
        const float pr = __shfl_sync(kFull, p, r), dsr = __shfl_sync(kFull, ds, r);
        if (pr == 0.0f && dsr == 0.0f) continue;
        const int64_t qrow = int64_t(b) * s.Tq + q0 + r;
        const T* q = qkv + qrow * s.W() + int64_t(h) * s.D;
        const T* dO = dout + qrow * s.C() + int64_t(h) * s.D;
#pragma unroll
        for (int k = 0; k < kMaxDpl; ++k) {
          const int d = lane + 32 * k;
          if (d < s.D) {
            dk[k] += dsr * to_f32(q[d]);
            dv[k] += pr * to_f32(dO[d]);
          }
        }
      }
    }
  float* dst = dkv + krow * s.Wkv();
#pragma unroll
  for (int k = 0; k < kMaxDpl; ++k) {
    const int d = lane + 32 * k;
    if (d < s.D) {
      dst[int64_t(hk) * s.D + d] += dk[k];
      dst[int64_t(s.Hkv + hk) * s.D + d] += dv[k];
    }
  }
}

BlockShape block_shape(const Tensor& qkv, const Tensor& kv, int n_head, int n_kv_head, const char* what) {
  const AttentionDims d = attention_dims(qkv, n_head, n_kv_head);
  if (d.D > 32 * kMaxDpl)
    throw ConfigError(std::string(what) + ": head size " + std::to_string(d.D) + " (d_model / n_head) is not supported "
                      "by the CUDA kernels; valid: 1 to 256");
  TRAINER_CHECK(d.T < (int64_t(1) << 30) && kv.shape[1] < (int64_t(1) << 30) && d.B * d.H <= 65535,
                std::string(what) + ": too large");
  return {int(d.B), int(d.T), int(kv.shape[1]), int(d.H), int(d.Hkv), int(d.D)};
}

const int* optional_i32(const Tensor& t) { return t.defined() ? t.ptr<const int>() : nullptr; }

}  // namespace

void run(const Context& ctx, const AttentionBlockForwardOp& op) {
  const BlockShape s = block_shape(op.qkv, op.kv, op.n_head, op.n_kv_head, op.kName);
  if (int64_t(s.B) * s.Tq * s.Tk * s.H == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(s.Tq, kWarps)), static_cast<unsigned>(s.B * s.H));
  dispatch_float(op.qkv.dtype, [&](auto tag) {
    using T = decltype(tag);
    block_forward_kernel<T><<<grid, 32 * kWarps, 0, ctx.stream>>>(
        op.out.ptr<float>(), op.lse.ptr<float>(), op.qkv.ptr<const T>(), op.kv.ptr<const T>(), op.q_pos.ptr<const int>(),
        op.k_pos.ptr<const int>(), optional_i32(op.q_doc), s, 1.0f / std::sqrt(float(s.D)));
    TRAINER_LAUNCH_CHECK();
  });
}

void run(const Context& ctx, const AttentionBlockBackwardOp& op) {
  const BlockShape s = block_shape(op.qkv, op.kv, op.n_head, op.n_kv_head, op.kName);
  if (int64_t(s.B) * s.Tq * s.Tk * s.H == 0) return;
  const float scale = 1.0f / std::sqrt(float(s.D));
  const dim3 q_grid(static_cast<unsigned>(ceil_div(s.Tq, kWarps)), static_cast<unsigned>(s.B * s.H));
  const dim3 k_grid(static_cast<unsigned>(ceil_div(s.Tk, kWarps)), static_cast<unsigned>(s.B * s.Hkv));
  dispatch_float(op.qkv.dtype, [&](auto tag) {
    using T = decltype(tag);
    block_dq_kernel<T><<<q_grid, 32 * kWarps, 0, ctx.stream>>>(
        op.dq.ptr<float>(), op.dout.ptr<const T>(), op.qkv.ptr<const T>(), op.kv.ptr<const T>(), op.out.ptr<const float>(),
        op.lse.ptr<const float>(), op.q_pos.ptr<const int>(), op.k_pos.ptr<const int>(), optional_i32(op.q_doc), s, scale);
    TRAINER_LAUNCH_CHECK();
    block_dkv_kernel<T><<<k_grid, 32 * kWarps, 0, ctx.stream>>>(
        op.dkv.ptr<float>(), op.dout.ptr<const T>(), op.qkv.ptr<const T>(), op.kv.ptr<const T>(),
        op.out.ptr<const float>(), op.lse.ptr<const float>(), op.q_pos.ptr<const int>(), op.k_pos.ptr<const int>(),
        optional_i32(op.q_doc), s, scale);
    TRAINER_LAUNCH_CHECK();
  });
}

}  // namespace trainer::cuda
