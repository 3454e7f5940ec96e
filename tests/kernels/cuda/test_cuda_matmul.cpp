// CUDA matmul with unaligned views (the epilogues take only 16-byte aligned bias pointers, so
// these get the plain product and our bias kernel; an unaligned residual is C at that
// alignment, or our add kernel; an unaligned gelu_inp gets our GELU and bias-gradient
// kernels; a weight gradient's BGRADB sees unaligned operands). Transposes, bias, GELU, accumulation into
// act and f32, K = 0 and odd shapes against the CPU are in the parity tables (parity_cases.h).
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

constexpr Transpose kN = Transpose::none;
constexpr Transpose kT = Transpose::transpose;
constexpr Accumulate kOver = Accumulate::overwrite;

TEST_CASE("matmul accepts unaligned views") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(rig.label);
    const int64_t M = 24, N = 40, K = 32;
    Tensors cpu(*rig.cpu), gpu(*rig.gpu);
    const auto a = rounded(random_floats(M * K, 91), rig.act);
    const auto b = rounded(random_floats(N * K, 92), rig.act);
    const auto bias = rounded(random_floats(N, 93), rig.act);
    Tensor cout = cpu.alloc(DType::f32, {M, N});
    rig.cpu->matmul(cout, cpu.upload(a, DType::f32, {M, K}), cpu.upload(b, DType::f32, {N, K}), kN, kT,
                    cpu.upload(bias, DType::f32, {N}), kOver, Tensor{});
    Tensor gout = gpu.poisoned(rig.act, {M, N}, 1);
    rig.gpu->matmul(gout, gpu.upload(a, rig.act, {M, K}, 1), gpu.upload(b, rig.act, {N, K}, 3), kN, kT,
                    gpu.upload(bias, rig.act, {N}, 1), kOver, Tensor{});
    check_close(gpu.read(gout), cpu.read(cout), p == Precision::bf16 ? rig.tol : 5 * kTolF32, "unaligned matmul");

    const auto residual = rounded(random_floats(M * N, 94), rig.act);
    Tensor cres = cpu.alloc(DType::f32, {M, N});
    rig.cpu->matmul_residual(cres, cpu.upload(a, DType::f32, {M, K}), cpu.upload(b, DType::f32, {N, K}), kN, kT,
                             cpu.upload(bias, DType::f32, {N}), cpu.upload(residual, DType::f32, {M, N}));
    Tensor gres = gpu.poisoned(rig.act, {M, N}, 3);
    rig.gpu->matmul_residual(gres, gpu.upload(a, rig.act, {M, K}, 1), gpu.upload(b, rig.act, {N, K}, 3), kN, kT,
                             gpu.upload(bias, rig.act, {N}, 1), gpu.upload(residual, rig.act, {M, N}, 1));
    check_close(gpu.read(gres), cpu.read(cres), p == Precision::bf16 ? rig.tol : 5 * kTolF32,
                "unaligned matmul with residual");

    // The backward form with an unaligned pre-activation (no DGELU epilogue: our GELU and
    // bias-gradient kernels after the plain product).
    auto pre = rounded(random_floats(M * N, 95), rig.act);
    for (float& x : pre) x *= 4;
    const auto db_start = random_floats(N, 96);
    Tensor cdx = cpu.alloc(DType::f32, {M, N});
    Tensor cdb = cpu.upload(db_start, DType::f32, {N});
    rig.cpu->matmul_gelu_backward(cdx, cpu.upload(a, DType::f32, {M, K}), cpu.upload(b, DType::f32, {N, K}), kN, kT,
                                  cpu.upload(pre, DType::f32, {M, N}), cdb);
    Tensor gdx = gpu.poisoned(rig.act, {M, N}, 0);
    Tensor gdb = gpu.upload(db_start, DType::f32, {N});
    rig.gpu->matmul_gelu_backward(gdx, gpu.upload(a, rig.act, {M, K}, 1), gpu.upload(b, rig.act, {N, K}, 3), kN, kT,
                                  gpu.upload(pre, rig.act, {M, N}, 1), gdb);
    check_close(gpu.read(gdx), cpu.read(cdx), p == Precision::bf16 ? rig.tol : 5 * kTolF32,
                "unaligned matmul with gelu_inp");
    check_close(gpu.read(gdb), cpu.read(cdb), p == Precision::bf16 ? rig.tol : 5 * kTolSum,
                "unaligned matmul's dbias");

    // A weight gradient with its bias gradient from unaligned views: a as the (M, K) output
    // gradient, inp (M, N); dweight (K, N) f32 += a^T inp, dbias_a (K) += a's column sums.
    const auto inp = rounded(random_floats(M * N, 97), rig.act);
    const auto dw_start = random_floats(K * N, 98), dba_start = random_floats(K, 99);
    Tensor cdw = cpu.upload(dw_start, DType::f32, {K, N}), cdba = cpu.upload(dba_start, DType::f32, {K});
    rig.cpu->linear_weight_backward(cdw, cdba, cpu.upload(a, DType::f32, {M, K}), cpu.upload(inp, DType::f32, {M, N}));
    Tensor gdw = gpu.upload(dw_start, DType::f32, {K, N}, 1), gdba = gpu.upload(dba_start, DType::f32, {K}, 1);
    rig.gpu->linear_weight_backward(gdw, gdba, gpu.upload(a, rig.act, {M, K}, 1), gpu.upload(inp, rig.act, {M, N}, 3));
    check_close(gpu.read(gdw), cpu.read(cdw), 5 * kTolSum, "unaligned weight gradient");
    check_close(gpu.read(gdba), cpu.read(cdba), 5 * kTolSum, "unaligned weight gradient's dbias_a");
  }
}

}  // namespace
}  // namespace trainer::testing
