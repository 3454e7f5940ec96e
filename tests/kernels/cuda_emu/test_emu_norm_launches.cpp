// The norm backwards' launches, counted on the emulator: each is its row kernel and one launch
// of add_column_partials (cuda_reduce.cu), which sums both of LayerNorm's weight gradients (and
// both of the head norm's) together. Their values against the CPU are the parity tables'
// (parity_cases.h, parity_rmsnorm_cases.h), with 513 row blocks among their shapes.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda_emu/cuda_emu_counts.h"

namespace trainer::testing {
namespace {

TEST_CASE("norm backwards launch their row kernel and one column-partials kernel") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(std::string(rig.label));
    const int64_t N = 100, C = 8;
    Tensors gpu(*rig.gpu);
    Tensor x = gpu.upload(rounded(random_floats(N * C, 401, -2, 2), rig.act), rig.act, {N, C});
    Tensor w = gpu.upload(rounded(random_floats(C, 402, 0.5f, 1.5f), rig.act), rig.act, {C});
    Tensor dout = gpu.upload(rounded(random_floats(N * C, 403), rig.act), rig.act, {N, C});
    Tensor mean = gpu.alloc(DType::f32, {N}), rstd = gpu.alloc(DType::f32, {N});
    rig.gpu->layernorm_forward(gpu.alloc(rig.act, {N, C}), mean, rstd, x, w, w);
    Tensor dw = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    Tensor db = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    rig.gpu->synchronize();
    emu::reset_counts();
    rig.gpu->layernorm_backward(gpu.alloc(rig.act, {N, C}), dw, db, dout, x, w, mean, rstd, Accumulate::overwrite);
    rig.gpu->synchronize();
    CHECK(emu::count("kernel launches") == 2);

    rig.gpu->rmsnorm_forward(gpu.alloc(rig.act, {N, C}), rstd, x, w, 1e-5f);
    Tensor dw2 = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    rig.gpu->synchronize();
    emu::reset_counts();
    rig.gpu->rmsnorm_backward(gpu.alloc(rig.act, {N, C}), dw2, dout, x, w, rstd, Accumulate::overwrite);
    rig.gpu->synchronize();
    CHECK(emu::count("kernel launches") == 2);

    const int64_t H = 2, Hkv = 1, D = 8, W = (H + 2 * Hkv) * D;  // N rows of q, k and v heads
    Tensor qkv = gpu.upload(rounded(random_floats(N * W, 404, -2, 2), rig.act), rig.act, {1, N, W});
    Tensor dqkv = gpu.upload(rounded(random_floats(N * W, 405), rig.act), rig.act, {1, N, W});
    Tensor head_rstd = gpu.alloc(DType::f32, {N * (H + Hkv)});
    rig.gpu->head_rmsnorm_forward(gpu.alloc(rig.act, {1, N, W}), head_rstd, qkv, w, w, int(H), int(Hkv), 1e-6f);
    Tensor dq = gpu.upload(std::vector<float>(D, 0.0f), DType::f32, {D});
    Tensor dk = gpu.upload(std::vector<float>(D, 0.0f), DType::f32, {D});
    rig.gpu->synchronize();
    emu::reset_counts();
    rig.gpu->head_rmsnorm_backward(gpu.alloc(rig.act, {1, N, W}), dq, dk, dqkv, qkv, w, w, head_rstd, int(H),
                                   int(Hkv));
    rig.gpu->synchronize();
    CHECK(emu::count("kernel launches") == 2);
  }
}

}  // namespace
}  // namespace trainer::testing
