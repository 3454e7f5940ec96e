// Rotary position embedding (Hugging Face's rotate-half layout) on the q and k heads of a qkv
// tensor (B, T, (H + 2*Hkv)*D); v heads are copied. In every q and k head, feature i < D/2
// pairs with feature i + D/2 and the pair turns by angle = float(pos_offset + t) * inv_freq[i]
// (or float(positions[row]): packed documents whose positions restart),
// computed in f32 as the CPU does (cosf/sinf, not the fast intrinsics):
//   y[i] = x[i] cos - x[i + D/2] sin,  y[i + D/2] = x[i + D/2] cos + x[i] sin
// Backward is the transposed rotation (sin negated, direction -1). One block per row, one
// thread per unit of the row: a pair of a q or k head, or one element of the v heads; adjacent
// threads take adjacent features, so both halves of a head are read coalesced. Each unit is
// read before it is written by the same thread, so out may be inp (in place).
// Not fused into attention: rotating in the attention prologue would redo the rotation at
// every reload of a k tile (T / 64 times per (batch, head)), make the two backward kernels of
// both paths un-rotate dQ and dK, and change the attention ops' contract (they take rotated q
// and k, which the model keeps for backward). Nor into the QKV projection: it is a cuBLASLt
// matmul, whose epilogues have no rotary form. This kernel is one pass over the q and k heads,
// in place, cos/sin computed on the fly (no table in memory).
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;

// One block per row (b, t) of the B*T rows; its threads stride over the row's units:
// (H + Hkv) * D/2 pairs, then Hkv * D elements of the v heads.
template <class T>
__global__ void rope_kernel(T* out, const T* inp, const float* inv_freq, const int* positions, int T_len, int H,
                            int Hkv, int D, int64_t pos_offset, float direction) {
  const int half = D / 2, pairs = (H + Hkv) * half, units = pairs + Hkv * D;
  const int64_t row = blockIdx.x;
  const float pos = float(positions ? int64_t(positions[row]) : pos_offset + row % T_len);
  T* y = out + row * (int64_t(H + 2 * Hkv) * D);
  const T* x = inp + row * (int64_t(H + 2 * Hkv) * D);
  for (int k = threadIdx.x; k < units; k += blockDim.x) {
    if (k >= pairs) {
      const int e = (H + Hkv) * D + (k - pairs);
      y[e] = x[e];
      continue;
    }
    const int i = k % half, e = (k / half) * D + i;
    const float angle = pos * inv_freq[i];
    const float c = cosf(angle), s = direction * sinf(angle);
    const float a = to_f32(x[e]), b = to_f32(x[e + half]);
    y[e] = from_f32<T>(a * c - b * s);
    y[e + half] = from_f32<T>(b * c + a * s);
  }
}

void rope(const Context& ctx, Tensor out, Tensor inp, Tensor inv_freq, int n_head, int n_kv_head, int64_t pos_offset,
          Tensor positions, float direction) {
  const AttentionDims d = attention_dims(inp, n_head, n_kv_head);
  const int64_t rows = d.B * d.T;
  if (rows * d.width() == 0) return;
  TRAINER_CHECK(rows < (int64_t(1) << 31) && d.width() < (int64_t(1) << 31) && d.T < (int64_t(1) << 31),
                "rope: too large (" + inp.shape_str() + ")");
  dispatch_float(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    rope_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream>>>(
        out.ptr<T>(), inp.ptr<const T>(), inv_freq.ptr<const float>(),
        positions.defined() ? positions.ptr<const int>() : nullptr, int(d.T), int(d.H), int(d.Hkv), int(d.D),
        pos_offset, direction);
    TRAINER_LAUNCH_CHECK();
  });
}

}  // namespace

void run(const Context& ctx, const RopeForwardOp& op) {
  rope(ctx, op.out, op.inp, op.inv_freq, op.n_head, op.n_kv_head, op.pos_offset, op.positions, 1.0f);
}

void run(const Context& ctx, const RopeBackwardOp& op) {
  rope(ctx, op.dinp, op.dout, op.inv_freq, op.n_head, op.n_kv_head, op.pos_offset, op.positions, -1.0f);
}

}  // namespace trainer::cuda
