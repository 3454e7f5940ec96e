// Causal self-attention: argument checks, dispatch between the tensor-core kernels
// (cuda_attention_mma.cu) and the scalar kernels here, and the D = rowsum(dO * O) pass. A
// document mask (doc_start) runs the scalar kernels, which skip the key tiles before a block's
// first document start and, in dK/dV, the query tiles whose documents start after its keys.
// Scalar kernels (any float dtype, head_dim up to 256, fp32 math): a block owns 32 rows of one
// (batch, head), 8 warps x 4 rows; the other side streams through shared memory in tiles of 32
// rows, one lane per row of the tile. Forward keeps (max, sum, output) per row in registers
// (online softmax). Backward: one kernel owns query rows and accumulates dQ, another owns key
// rows of a k/v head and accumulates dK and dV over the query heads of its group, each
// recomputing P = exp(s - lse).
// Shared-memory rows read lane-by-row are padded to D + 1 floats (no bank conflicts).
#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/cuda/cuda_attention.h"
#include "kernels/cuda/cuda_common.cuh"

namespace trainer::cuda {

namespace {

constexpr int kRows = 32;  // rows per block and per tile
constexpr int kThreads = 256;
constexpr int kRowsPerWarp = 4;
constexpr unsigned kFull = 0xffffffffu;

// The first key tile a block of query rows from q0 needs: 0, or the tile holding the first
// row's document start (starts never decrease along a sequence, so no row of the block sees
// an earlier key).
__device__ __forceinline__ int first_tile(const int* doc_b, int q0) {
  return doc_b ? (doc_b[q0] / kRows) * kRows : 0;
}

template <class T, int DPL>
__global__ void __launch_bounds__(kThreads) attention_forward_scalar(T* out, float* lse, const T* qkv,
                                                                     const int* doc, int T_len, QkvLayout L,
                                                                     float scale) {
  extern __shared__ float smem[];
  constexpr int DP = 32 * DPL;
  const int H = L.H, D = L.D;
  const int Dk = D + 1;
  float* Qs = smem;               // [kRows][D]
  float* Ks = Qs + kRows * D;     // [kRows][D + 1]
  float* Vs = Ks + kRows * Dk;    // [kRows][DP], zero past D
  const int b = blockIdx.y / H, h = blockIdx.y % H;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kRows;  // longest rows first
  const int64_t stride = L.row();
  const HeadRows<T> rows_bh = head_rows(L, qkv, T_len, b, h);
  const T *qbase = rows_bh.q, *kbase = rows_bh.k, *vbase = rows_bh.v;
  for (int i = threadIdx.x; i < kRows * D; i += blockDim.x) {
    const int t = q0 + i / D;
    Qs[i] = t < T_len ? to_f32(qbase[t * stride + i % D]) : 0.0f;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][DPL];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < DPL; ++i) o[r][i] = 0.0f;
  }
  const int* doc_b = doc ? doc + int64_t(b) * T_len : nullptr;
  int lo[kRowsPerWarp];  // each row's first visible key
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int t = q0 + warp * kRowsPerWarp + rr;
    lo[rr] = doc_b && t < T_len ? doc_b[t] : 0;
  }
  const int last_key = min(q0 + kRows, T_len) - 1;
  for (int k0 = first_tile(doc_b, q0); k0 <= last_key; k0 += kRows) {
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * DP; i += blockDim.x) {
      const int j = i / DP, d = i % DP, t = k0 + j;
      const bool ok = t < T_len && d < D;
      if (d < D) Ks[j * Dk + d] = ok ? to_f32(kbase[t * stride + d]) : 0.0f;
      Vs[i] = ok ? to_f32(vbase[t * stride + d]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr, t = q0 + r;
      if (t >= T_len || k0 > t || k0 + kRows <= lo[rr]) continue;  // warp-uniform
      const int key = k0 + lane;
      const bool seen = key <= t && key >= lo[rr];
      float s = -INFINITY;
      if (seen) {
        float acc = 0.0f;
        for (int d = 0; d < D; ++d) acc += Qs[r * D + d] * Ks[lane * Dk + d];
        s = acc * scale;
      }
      // Finite: the tile holds a key in [lo, t] (their range is contiguous and meets it).
      const float m_new = fmaxf(m[rr], warp_reduce(s, MaxOp{}));
      const float p = seen ? expf(s - m_new) : 0.0f;
      const float corr = expf(m[rr] - m_new);
      l[rr] = l[rr] * corr + warp_reduce(p, SumOp{});
      m[rr] = m_new;
#pragma unroll
      for (int i = 0; i < DPL; ++i) o[rr][i] *= corr;
      for (int j = 0; j < kRows; ++j) {
        const float pj = __shfl_sync(kFull, p, j);
#pragma unroll
        for (int i = 0; i < DPL; ++i) o[rr][i] += pj * Vs[j * DP + lane + 32 * i];
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int t = q0 + warp * kRowsPerWarp + rr;
    if (t >= T_len) continue;
    const float inv = 1.0f / l[rr];
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + 32 * i;
      if (d < D) out[(int64_t(b) * T_len + t) * L.out_row() + L.q_col(h) + d] = from_f32<T>(o[rr][i] * inv);
    }
    if (lane == 0) lse[(int64_t(b) * H + h) * T_len + t] = m[rr] + logf(l[rr]);
  }
}

// dvec[(b,h,t)] = sum_d dout * out; one warp per (b, t, h).
template <class T>
__global__ void attention_dvec_kernel(float* dvec, const T* dout, const T* out, int64_t rows, int T_len,
                                      int H, int D) {
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const T* d_row = dout + row * D;
  const T* o_row = out + row * D;
  float acc = 0.0f;
  for (int d = lane; d < D; d += 32) acc += to_f32(d_row[d]) * to_f32(o_row[d]);
  acc = warp_reduce(acc, SumOp{});
  const int64_t bt = row / H;
  const int h = static_cast<int>(row % H);
  const int64_t b = bt / T_len, t = bt % T_len;
  if (lane == 0) dvec[(b * H + h) * T_len + t] = acc;
}

template <class T, int DPL>
__global__ void __launch_bounds__(kThreads) attention_dq_scalar(T* dqkv, const T* dout, const T* qkv, const float* lse,
                                                                const float* dvec, const int* doc, int T_len,
                                                                QkvLayout L, float scale) {
  extern __shared__ float smem[];
  const int H = L.H, D = L.D;
  const int Dk = D + 1;
  float* Qs = smem;              // [kRows][D]
  float* dOs = Qs + kRows * D;   // [kRows][D]
  float* Ks = dOs + kRows * D;   // [kRows][D + 1]
  float* Vs = Ks + kRows * Dk;   // [kRows][D + 1]
  const int b = blockIdx.y / H, h = blockIdx.y % H;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kRows;
  const int64_t stride = L.row(), out_stride = L.out_row();
  const HeadRows<T> rows_bh = head_rows(L, qkv, T_len, b, h);
  const T *qbase = rows_bh.q, *kbase = rows_bh.k, *vbase = rows_bh.v;
  const T* dbase = dout + int64_t(b) * T_len * out_stride + L.q_col(h);
  for (int i = threadIdx.x; i < kRows * D; i += blockDim.x) {
    const int t = q0 + i / D, d = i % D;
    Qs[i] = t < T_len ? to_f32(qbase[t * stride + d]) : 0.0f;
    dOs[i] = t < T_len ? to_f32(dbase[t * out_stride + d]) : 0.0f;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* lse_bh = lse + (int64_t(b) * H + h) * T_len;
  const float* dvec_bh = dvec + (int64_t(b) * H + h) * T_len;
  const int* doc_b = doc ? doc + int64_t(b) * T_len : nullptr;
  float row_lse[kRowsPerWarp], row_d[kRowsPerWarp], dq[kRowsPerWarp][DPL];
  int lo[kRowsPerWarp];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int t = q0 + warp * kRowsPerWarp + rr;
    row_lse[rr] = t < T_len ? lse_bh[t] : 0.0f;
    row_d[rr] = t < T_len ? dvec_bh[t] : 0.0f;
    lo[rr] = doc_b && t < T_len ? doc_b[t] : 0;
#pragma unroll
    for (int i = 0; i < DPL; ++i) dq[rr][i] = 0.0f;
  }
  const int last_key = min(q0 + kRows, T_len) - 1;
  for (int k0 = first_tile(doc_b, q0); k0 <= last_key; k0 += kRows) {
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * D; i += blockDim.x) {
      const int j = i / D, d = i % D, t = k0 + j;
      Ks[j * Dk + d] = t < T_len ? to_f32(kbase[t * stride + d]) : 0.0f;
      Vs[j * Dk + d] = t < T_len ? to_f32(vbase[t * stride + d]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr, t = q0 + r;
      if (t >= T_len || k0 > t || k0 + kRows <= lo[rr]) continue;
      const int key = k0 + lane;
      float ds = 0.0f;
      if (key <= t && key >= lo[rr]) {
        float s = 0.0f, dp = 0.0f;
        for (int d = 0; d < D; ++d) {
          s += Qs[r * D + d] * Ks[lane * Dk + d];
          dp += dOs[r * D + d] * Vs[lane * Dk + d];
        }
        const float p = expf(s * scale - row_lse[rr]);
        ds = p * (dp - row_d[rr]);
      }
      for (int j = 0; j < kRows; ++j) {
        const float dsj = __shfl_sync(kFull, ds, j);
#pragma unroll
        for (int i = 0; i < DPL; ++i) {
          const int d = lane + 32 * i;
          if (d < D) dq[rr][i] += dsj * Ks[j * Dk + d];
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int t = q0 + warp * kRowsPerWarp + rr;
    if (t >= T_len) continue;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + 32 * i;
      if (d < D) dqkv[(int64_t(b) * T_len + t) * stride + L.q_col(h) + d] = from_f32<T>(dq[rr][i] * scale);
    }
  }
}

// One block per (batch, k/v head j, key tile); dK and dV sum over the group's query heads in
// head order, then over the query tiles of each.
template <class T, int DPL>
__global__ void __launch_bounds__(kThreads) attention_dkv_scalar(T* dqkv, const T* dout, const T* qkv, const float* lse,
                                                                 const float* dvec, const int* doc, int T_len,
                                                                 QkvLayout L, float scale) {
  extern __shared__ float smem[];
  const int H = L.H, D = L.D;
  const int Dq = D + 1;
  float* Kr = smem;               // [kRows][D]   this block's key rows
  float* Vr = Kr + kRows * D;     // [kRows][D]
  float* Qs = Vr + kRows * D;     // [kRows][D + 1] query tile
  float* dOs = Qs + kRows * Dq;   // [kRows][D + 1]
  float* lse_s = dOs + kRows * Dq;
  float* dvec_s = lse_s + kRows;
  int* lo_s = reinterpret_cast<int*>(dvec_s + kRows);  // each query row's first visible key
  const int b = blockIdx.y / L.Hkv, kvh = blockIdx.y % L.Hkv;
  const int k0 = blockIdx.x * kRows;  // smallest keys (most queries) first
  const int64_t stride = L.row(), out_stride = L.out_row();
  const T* rows_b = qkv + int64_t(b) * T_len * stride;
  const T* kbase = rows_b + L.k_col(kvh);
  const T* vbase = rows_b + L.v_col(kvh);
  for (int i = threadIdx.x; i < kRows * D; i += blockDim.x) {
    const int t = k0 + i / D, d = i % D;
    Kr[i] = t < T_len ? to_f32(kbase[t * stride + d]) : 0.0f;
    Vr[i] = t < T_len ? to_f32(vbase[t * stride + d]) : 0.0f;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float dk[kRowsPerWarp][DPL], dv[kRowsPerWarp][DPL];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr)
#pragma unroll
    for (int i = 0; i < DPL; ++i) dk[rr][i] = dv[rr][i] = 0.0f;
  for (int h = kvh * L.group(); h < (kvh + 1) * L.group(); ++h) {
    const T* qbase = rows_b + L.q_col(h);
    const T* dbase = dout + int64_t(b) * T_len * out_stride + L.q_col(h);
    const float* lse_bh = lse + (int64_t(b) * H + h) * T_len;
    const float* dvec_bh = dvec + (int64_t(b) * H + h) * T_len;
    const int* doc_b = doc ? doc + int64_t(b) * T_len : nullptr;
    for (int q0 = k0; q0 < T_len; q0 += kRows) {
      // Documents start in order: from a query whose document begins after this block's last
      // key on, no query sees any of its keys.
      if (doc_b && doc_b[q0] > k0 + kRows - 1) break;
      __syncthreads();
      for (int i = threadIdx.x; i < kRows * D; i += blockDim.x) {
        const int j = i / D, d = i % D, t = q0 + j;
        Qs[j * Dq + d] = t < T_len ? to_f32(qbase[t * stride + d]) : 0.0f;
        dOs[j * Dq + d] = t < T_len ? to_f32(dbase[t * out_stride + d]) : 0.0f;
      }
      if (threadIdx.x < kRows) {
        const int t = q0 + threadIdx.x;
        lse_s[threadIdx.x] = t < T_len ? lse_bh[t] : 0.0f;
        dvec_s[threadIdx.x] = t < T_len ? dvec_bh[t] : 0.0f;
        lo_s[threadIdx.x] = doc_b && t < T_len ? doc_b[t] : 0;
      }
      __syncthreads();
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) {
        const int r = warp * kRowsPerWarp + rr, key = k0 + r;
        if (key >= T_len || q0 + kRows - 1 < key) continue;
        const int q = q0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (q >= key && q < T_len && lo_s[lane] <= key) {
          float s = 0.0f, dp = 0.0f;
          for (int d = 0; d < D; ++d) {
            s += Qs[lane * Dq + d] * Kr[r * D + d];
            dp += dOs[lane * Dq + d] * Vr[r * D + d];
          }
          p = expf(s * scale - lse_s[lane]);
          ds = p * (dp - dvec_s[lane]);
        }
        for (int j = 0; j < kRows; ++j) {
          const float pj = __shfl_sync(kFull, p, j);
          const float dsj = __shfl_sync(kFull, ds, j);
#pragma unroll
          for (int i = 0; i < DPL; ++i) {
            const int d = lane + 32 * i;
            if (d < D) {
              dv[rr][i] += pj * dOs[j * Dq + d];
              dk[rr][i] += dsj * Qs[j * Dq + d];
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int key = k0 + warp * kRowsPerWarp + rr;
    if (key >= T_len) continue;
    T* row = dqkv + (int64_t(b) * T_len + key) * stride;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + 32 * i;
      if (d < D) {
        row[L.k_col(kvh) + d] = from_f32<T>(dk[rr][i] * scale);
        row[L.v_col(kvh) + d] = from_f32<T>(dv[rr][i]);
      }
    }
  }
}

// Calls f(std::integral_constant<int, DPL>) for the smallest DPL in {1, 2, 4, 8} with
// 32 * DPL >= D.
template <class F>
void dispatch_dpl(int64_t D, F&& f) {
  if (D <= 32) f(std::integral_constant<int, 1>{});
  else if (D <= 64) f(std::integral_constant<int, 2>{});
  else if (D <= 128) f(std::integral_constant<int, 4>{});
  else f(std::integral_constant<int, 8>{});
}

// The kernels' own limits on top of the contract.
AttentionShape attention_shape(const Tensor& qkv, int n_head, int n_kv_head, const char* what) {
  const AttentionShape s = attention_dims(qkv, n_head, n_kv_head);
  if (s.D > 256)
    throw ConfigError("attention: head size " + std::to_string(s.D) +
                      " (d_model / n_head) is not supported by the CUDA kernels; valid: 1 to 256");
  TRAINER_CHECK(s.T <= (int64_t(1) << 30) && s.B * s.H <= 65535, std::string(what) + ": too large");
  return s;
}

QkvLayout layout_of(const AttentionShape& s) { return {int(s.H), int(s.Hkv), int(s.D)}; }

}  // namespace

size_t smem_optin_limit() {
  int device = 0, bytes = 0;
  TRAINER_CUDA_CHECK(cudaGetDevice(&device));
  TRAINER_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return size_t(bytes);
}

void check_smem(size_t bytes, int64_t D, const char* kernel) {
  const size_t limit = smem_optin_limit();
  if (bytes > limit)
    throw ConfigError("attention: head size " + std::to_string(D) + " (d_model / n_head) needs " +
                      std::to_string(bytes) + " bytes of shared memory per block in " + kernel +
                      "; this GPU allows " + std::to_string(limit) +
                      " (cudaDevAttrMaxSharedMemoryPerBlockOptin); valid here: a smaller head size, or, with bf16 "
                      "activations, train.attention: cudnn");
}

void run(const Context& ctx, const AttentionForwardOp& op) {
  const Tensor &out = op.out, &lse = op.lse, &qkv = op.qkv;
  const AttentionShape s = attention_shape(qkv, op.n_head, op.n_kv_head, op.kName);
  if (s.B * s.T * s.H == 0) return;
  // The tensor-core kernels are causal only: a document mask takes the scalar ones.
  const int* doc = op.doc_start.defined() ? op.doc_start.ptr<const int>() : nullptr;
  if (!doc && attention_mma_supported(s, qkv.dtype) && aligned16(qkv.data) && aligned16(out.data)) {
    attention_forward_mma(ctx, s, out, lse, qkv);
    return;
  }
  const float scale = 1.0f / std::sqrt(float(s.D));
  const dim3 grid(static_cast<unsigned>(ceil_div(s.T, kRows)), static_cast<unsigned>(s.B * s.H));
  dispatch_float(qkv.dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_dpl(s.D, [&](auto dpl) {
      constexpr int DPL = decltype(dpl)::value;
      const size_t smem = sizeof(float) * kRows * (s.D + (s.D + 1) + 32 * DPL);
      auto kernel = attention_forward_scalar<T, DPL>;
      allow_smem(kernel, smem, s.D, "attention_forward");
      kernel<<<grid, kThreads, smem, ctx.stream>>>(out.ptr<T>(), lse.ptr<float>(), qkv.ptr<const T>(), doc,
                                                  int(s.T), layout_of(s), scale);
      TRAINER_LAUNCH_CHECK();
    });
  });
}

void run(const Context& ctx, const AttentionBackwardOp& op) {
  const Tensor &dqkv = op.dqkv, &dout = op.dout, &qkv = op.qkv, &out = op.out, &lse = op.lse;
  const AttentionShape s = attention_shape(qkv, op.n_head, op.n_kv_head, op.kName);
  if (s.B * s.T * s.H == 0) return;
  float* dvec = static_cast<float*>(ctx.workspace->get(sizeof(float) * s.B * s.H * s.T));
  const int64_t rows = s.B * s.T * s.H;
  dispatch_float(qkv.dtype, [&](auto tag) {
    using T = decltype(tag);
    attention_dvec_kernel<T><<<static_cast<unsigned>(ceil_div(rows, kThreads / 32)), kThreads, 0, ctx.stream>>>(
        dvec, dout.ptr<const T>(), out.ptr<const T>(), rows, int(s.T), int(s.H), int(s.D));
    TRAINER_LAUNCH_CHECK();
  });
  const int* doc = op.doc_start.defined() ? op.doc_start.ptr<const int>() : nullptr;
  if (!doc && attention_mma_supported(s, qkv.dtype) && aligned16(qkv.data) && aligned16(dqkv.data) &&
      aligned16(dout.data)) {
    attention_backward_mma(ctx, s, dqkv, dout, qkv, lse, dvec);
    return;
  }
  const float scale = 1.0f / std::sqrt(float(s.D));
  const dim3 grid(static_cast<unsigned>(ceil_div(s.T, kRows)), static_cast<unsigned>(s.B * s.H));
  const dim3 kv_grid(static_cast<unsigned>(ceil_div(s.T, kRows)), static_cast<unsigned>(s.B * s.Hkv));
  dispatch_float(qkv.dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_dpl(s.D, [&](auto dpl) {
      constexpr int DPL = decltype(dpl)::value;
      const size_t smem_dq = sizeof(float) * kRows * (2 * s.D + 2 * (s.D + 1));
      auto dq_kernel = attention_dq_scalar<T, DPL>;
      allow_smem(dq_kernel, smem_dq, s.D, "attention_backward's dQ");
      dq_kernel<<<grid, kThreads, smem_dq, ctx.stream>>>(dqkv.ptr<T>(), dout.ptr<const T>(), qkv.ptr<const T>(),
                                                        lse.ptr<const float>(), dvec, doc, int(s.T),
                                                        layout_of(s), scale);
      TRAINER_LAUNCH_CHECK();
      const size_t smem_dkv = sizeof(float) * kRows * (2 * s.D + 2 * (s.D + 1) + 3);
      auto dkv_kernel = attention_dkv_scalar<T, DPL>;
      allow_smem(dkv_kernel, smem_dkv, s.D, "attention_backward's dK/dV");
      dkv_kernel<<<kv_grid, kThreads, smem_dkv, ctx.stream>>>(dqkv.ptr<T>(), dout.ptr<const T>(),
                                                             qkv.ptr<const T>(), lse.ptr<const float>(), dvec,
                                                             doc, int(s.T), layout_of(s), scale);
      TRAINER_LAUNCH_CHECK();
    });
  });
}

}  // namespace trainer::cuda
