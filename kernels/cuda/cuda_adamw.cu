// Fused AdamW over many contiguous ranges in one launch (adamw_many; adamw is its one-piece
// form): fp32 master weights, gradients and moments, one pass, writing the compute copy of the
// weights (bf16 or f32) in the same pass. The update is
// PyTorch's formulation, written as the CPU backend writes it so both agree to rounding:
//   g = grad * grad_scale; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//   p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// Stochastic rounding of the bf16 copy adds 16 random bits below the bf16 mantissa before
// truncating, so the copy rounds up with probability equal to the dropped fraction (unbiased).
// The bits come from a counter-based hash of (seed, offset + element index): no generator
// state, the same element rounds alike in any layout, and reruns are bit-identical.
// Multi-tensor launches (apex's multi_tensor_apply, our way): the pieces travel in the kernel's
// parameters, a table of at most kTablePieces (under the 4 KiB parameter limit every driver
// takes); a block walks tiles of kTile elements numbered across the pieces and finds its piece
// by binary search over the table. Element-wise, so the split into launches and tiles changes
// no result: one launch over 150 tensors gives the bits of 150 launches.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kTile = int64_t(kThreads) * kChunk;  // elements per block and tile
constexpr int kTablePieces = 44;
constexpr int64_t kMaxGrid = 1 << 20;

// What one optimizer step shares between its pieces.
struct AdamWShared {
  float step_size, inv_bias2_sqrt, b1, b2, grad_scale, eps;
};

struct AdamWPiece {
  float* param;
  const float* grad;
  float* m;
  float* v;
  void* copy;  // the compute copy (the launch's TC), or null
  int64_t n;
  int64_t tile_begin;  // the piece's first tile in the launch (empty pieces are left out)
  uint64_t seed, offset;
  float decay;  // 1 - lr * weight_decay
  int vec;      // every pointer 16-byte aligned
};

struct AdamWTable {
  AdamWShared k;
  int count;
  int64_t tiles;
  AdamWPiece piece[kTablePieces];
};
static_assert(sizeof(AdamWTable) + 16 <= 4096, "the table must fit the 4 KiB kernel parameter space");

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

// index: the element's (offset + position) in its tensor's rounding stream.
template <class TC>
__device__ __forceinline__ void store_copy(TC* p, const float (&x)[kChunk], int count, bool vec,
                                           bool stochastic, uint64_t seed, uint64_t index) {
  store_chunk(p, x, count, vec);
}

template <>
__device__ __forceinline__ void store_copy<bf16>(bf16* p, const float (&x)[kChunk], int count,
                                                 bool vec, bool stochastic, uint64_t seed,
                                                 uint64_t index) {
  if (!stochastic) {
    store_chunk(p, x, count, vec);
    return;
  }
  uint32_t h[kChunk];
#pragma unroll
  for (int j = 0; j < kChunk; ++j) h[j] = bf16_bits_stochastic(x[j], hash_bits(seed, index + j));
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

template <class TC>
__global__ void adamw_kernel(const __grid_constant__ AdamWTable table, bool stochastic) {
  const AdamWShared& k = table.k;
  for (int64_t tile = blockIdx.x; tile < table.tiles; tile += gridDim.x) {
    const AdamWPiece& pc = table.piece[last_piece_at(table.piece, table.count, &AdamWPiece::tile_begin, tile)];
    const int64_t i = (tile - pc.tile_begin) * kTile + int64_t(threadIdx.x) * kChunk;
    if (i >= pc.n) continue;
    const int count = static_cast<int>(min(int64_t(kChunk), pc.n - i));
    const bool vec = pc.vec != 0;
    float p[kChunk], g[kChunk], mm[kChunk], vv[kChunk];
    load_chunk(p, pc.param + i, count, vec);
    load_chunk(g, pc.grad + i, count, vec);
    load_chunk(mm, pc.m + i, count, vec);
    load_chunk(vv, pc.v + i, count, vec);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const float gj = g[j] * k.grad_scale;
      mm[j] = k.b1 * mm[j] + (1.0f - k.b1) * gj;
      vv[j] = k.b2 * vv[j] + (1.0f - k.b2) * gj * gj;
      p[j] = p[j] * pc.decay - k.step_size * mm[j] / (sqrtf(vv[j]) * k.inv_bias2_sqrt + k.eps);
    }
    store_chunk(pc.param + i, p, count, vec);
    store_chunk(pc.m + i, mm, count, vec);
    store_chunk(pc.v + i, vv, count, vec);
    if (pc.copy) store_copy(static_cast<TC*>(pc.copy) + i, p, count, vec, stochastic, pc.seed, pc.offset + i);
  }
}

AdamWShared shared_constants(const AdamWStep& h) {
  const double t = double(h.step);
  AdamWShared k;
  k.step_size = float(double(h.lr) / (1.0 - std::pow(double(h.beta1), t)));
  k.inv_bias2_sqrt = float(1.0 / std::sqrt(1.0 - std::pow(double(h.beta2), t)));
  k.b1 = h.beta1;
  k.b2 = h.beta2;
  k.grad_scale = h.grad_scale;
  k.eps = h.eps;
  return k;
}

AdamWPiece piece_from(const AdamWOp& op, int64_t tile_begin) {
  AdamWPiece pc;
  pc.param = op.param.ptr<float>();
  pc.grad = op.grad.ptr<const float>();
  pc.m = op.m.ptr<float>();
  pc.v = op.v.ptr<float>();
  pc.copy = op.param_copy.defined() ? op.param_copy.data : nullptr;
  pc.n = op.param.numel();
  pc.tile_begin = tile_begin;
  pc.seed = op.h.seed;
  pc.offset = op.h.offset;
  pc.decay = 1.0f - op.h.lr * op.h.weight_decay;
  bool vec = aligned16(op.param.data) && aligned16(op.grad.data) && aligned16(op.m.data) && aligned16(op.v.data);
  if (pc.copy) vec = vec && aligned16(pc.copy);
  pc.vec = vec ? 1 : 0;
  return pc;
}

}  // namespace

// One launch per kTablePieces pieces.
void run(const Context& ctx, const AdamWManyOp& op) {
  if (op.pieces.empty()) return;
  DType copy_dtype = DType::f32;  // the contract makes every defined copy act
  for (const AdamWOp& p : op.pieces)
    if (p.param_copy.defined()) copy_dtype = p.param_copy.dtype;
  const bool stochastic = ctx.rounding == Rounding::stochastic;
  dispatch_float(copy_dtype, [&](auto tag) {
    using TC = decltype(tag);
    AdamWTable table{};
    table.k = shared_constants(op.pieces[0].h);
    auto launch = [&] {
      if (table.count == 0) return;
      const unsigned grid = static_cast<unsigned>(std::min(table.tiles, kMaxGrid));
      adamw_kernel<TC><<<grid, kThreads, 0, ctx.stream>>>(table, stochastic);
      TRAINER_LAUNCH_CHECK();
      table.count = 0;
      table.tiles = 0;
    };
    for (const AdamWOp& p : op.pieces) {
      const int64_t n = p.param.numel();
      if (n == 0) continue;
      table.piece[table.count++] = piece_from(p, table.tiles);
      table.tiles += ceil_div(n, kTile);
      if (table.count == kTablePieces) launch();
    }
    launch();
  });
}

void run(const Context& ctx, const AdamWOp& op) { run(ctx, AdamWManyOp{{op}}); }

}  // namespace trainer::cuda
