// The tensor-core attention kernels' work, counted on the emulator (its mma.sync counts one per
// warp instruction): each warp computes only the tiles its causal mask leaves something of, and
// a warp with no row (or key) inside T computes none. The expected counts restate
// cuda_attention_mma.cu's tiling: 4 warps of 16 kM rows (kM = 2 at D = 64, 1 at D = 128); key
// tiles of 64 in the forward, of 32 (D = 64) or 64 (D = 128, sm_90's shared memory; 32 on a GPU
// that allows a block less than its 104 KB) in dQ; query tiles of 32 in dK/dV, per query head of
// the group. The results themselves are the parity tables' (test_cuda_emu.cpp); dQ's two tile
// sizes at D = 128 give the same bits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda_emu/cuda_emu_counts.h"

namespace trainer::testing {
namespace {

struct Shape {
  int64_t B, T, H, Hkv, D;
  int64_t width() const { return (H + 2 * Hkv) * D; }
};

struct AttentionInputs {
  Tensor qkv, dout, out, lse;  // out and lse poisoned, for the forward to fill
};

AttentionInputs attention_inputs(Tensors& gpu, DType act, const Shape& s, uint64_t seed) {
  const int64_t C = s.H * s.D, rows = s.B * s.T;
  return {gpu.upload(rounded(random_floats(rows * s.width(), seed, -1.5f, 1.5f), act), act, {s.B, s.T, s.width()}),
          gpu.upload(rounded(random_floats(rows * C, seed + 1), act), act, {s.B, s.T, C}),
          gpu.poisoned(act, {s.B, s.T, C}), gpu.poisoned(DType::f32, {s.B, s.H, s.T})};
}

struct Work {
  int64_t forward = 0, backward = 0;
};

enum class Masked { skipped, computed };

// mma.sync m16n8k16 instructions of one forward and one backward; dq_tile_128: dQ's key tile at
// D = 128.
Work attention_mma_work(const Shape& s, Masked masked, int64_t dq_tile_128 = 64) {
  const int64_t kM = s.D == 64 ? 2 : 1, rows = 4 * 16 * kM;
  const int64_t k_tile = 64, dq_tile = s.D == 64 ? 32 : dq_tile_128, dkv_tile = 32;
  // (16 kM x D) against an n-row tile: S = A B^T is kM n/8 D/16 products; P V is kM D/8 n/16.
  const auto ab_t = [&](int64_t n) { return kM * (n / 8) * (s.D / 16); };
  const auto pv = [&](int64_t n) { return kM * (s.D / 8) * (n / 16); };
  const bool all = masked == Masked::computed;
  Work w;
  for (int64_t q0 = 0; q0 < s.T; q0 += rows)
    for (int64_t warp = 0; warp < 4; ++warp) {
      const int64_t first = q0 + warp * 16 * kM, last = std::min(first + 16 * kM, s.T) - 1;
      const int64_t block_last = std::min(q0 + rows, s.T) - 1;
      for (int64_t k0 = 0; k0 <= block_last / k_tile * k_tile; k0 += k_tile)
        if (all || (first < s.T && k0 <= last)) w.forward += ab_t(k_tile) + pv(k_tile);
      for (int64_t k0 = 0; k0 <= block_last / dq_tile * dq_tile; k0 += dq_tile)
        if (all || (first < s.T && k0 <= last)) w.backward += 2 * ab_t(dq_tile) + pv(dq_tile);
    }
  for (int64_t k0 = 0; k0 < s.T; k0 += rows)
    for (int64_t warp = 0; warp < 4; ++warp) {
      const int64_t first_key = k0 + warp * 16 * kM;
      for (int64_t q0 = k0; q0 < s.T; q0 += dkv_tile)
        if (all || (first_key < s.T && q0 + dkv_tile - 1 >= first_key))
          w.backward += 2 * ab_t(dkv_tile) + 2 * pv(dkv_tile);
    }
  // The dK/dV blocks run per k/v head and walk the group's query heads: B H times in all.
  w.forward *= s.B * s.H;
  w.backward *= s.B * s.H;
  return w;
}

TEST_CASE("attention's tensor-core kernels skip the tiles a warp's causal mask hides") {
  Rig rig = make_rig(Precision::bf16);
  for (const Shape& s : {Shape{1, 1024, 1, 1, 64}, Shape{2, 300, 4, 2, 64}, Shape{1, 200, 2, 1, 128},
                         Shape{1, 17, 1, 1, 64}}) {
    CAPTURE(s.T);
    CAPTURE(s.D);
    Tensors gpu(*rig.gpu);
    const auto [qkv, dout, out, lse] = attention_inputs(gpu, rig.act, s, 300);
    Tensor dqkv = gpu.poisoned(rig.act, {s.B, s.T, s.width()});
    const Work want = attention_mma_work(s, Masked::skipped);
    const Work all = attention_mma_work(s, Masked::computed);
    emu::reset_counts();
    rig.gpu->attention_forward(out, lse, qkv, int(s.H), int(s.Hkv));
    rig.gpu->synchronize();
    CHECK(emu::count("mma m16n8k16") == want.forward);
    emu::reset_counts();
    rig.gpu->attention_backward(dqkv, dout, qkv, out, lse, int(s.H), int(s.Hkv));
    rig.gpu->synchronize();
    CHECK(emu::count("mma m16n8k16") == want.backward);
    MESSAGE("T ", s.T, " D ", s.D, ": forward ", want.forward, " of ", all.forward, " products, backward ",
            want.backward, " of ", all.backward);
    if (s.T >= 256) {  // a diagonal with whole masked tiles
      CHECK(want.forward < all.forward);
      CHECK(want.backward < all.backward);
    }
  }
}

// The emulated GPU's opt-in shared memory, set for a scope.
struct OptinSharedLimit {
  explicit OptinSharedLimit(size_t bytes) : saved(emu::optin_shared_limit()) { emu::set_optin_shared_limit(bytes); }
  ~OptinSharedLimit() { emu::set_optin_shared_limit(saved); }
  size_t saved;
};

TEST_CASE("attention's D = 128 dQ streams 32-key tiles where a block may not have 104 KB, with the same bits") {
  Rig rig = make_rig(Precision::bf16);
  for (const Shape& s : {Shape{1, 200, 2, 1, 128}, Shape{2, 130, 4, 2, 128}}) {
    CAPTURE(s.T);
    Tensors gpu(*rig.gpu);
    const auto [qkv, dout, out, lse] = attention_inputs(gpu, rig.act, s, 310);
    rig.gpu->attention_forward(out, lse, qkv, int(s.H), int(s.Hkv));
    std::vector<float> dqkv_by_tile[2];
    for (const int64_t tile : {64, 32}) {
      // An RTX 4090 (sm_89) lets a block opt in to 99 KiB.
      OptinSharedLimit limit(tile == 64 ? emu::optin_shared_limit() : 99 * 1024);
      Tensor dqkv = gpu.poisoned(rig.act, {s.B, s.T, s.width()});
      emu::reset_counts();
      rig.gpu->attention_backward(dqkv, dout, qkv, out, lse, int(s.H), int(s.Hkv));
      rig.gpu->synchronize();
      CHECK(emu::count("mma m16n8k16") == attention_mma_work(s, Masked::skipped, tile).backward);
      dqkv_by_tile[tile == 32] = gpu.read(dqkv);
    }
    check_equal(dqkv_by_tile[1], dqkv_by_tile[0], "dqkv, dQ with 32-key against 64-key tiles");
  }
}

}  // namespace
}  // namespace trainer::testing
