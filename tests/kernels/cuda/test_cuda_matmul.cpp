// CUDA matmul with unaligned views (the epilogues take only 16-byte aligned bias pointers, so
// these get the plain product and our bias kernel; an unaligned residual is C at that
// alignment, or our add kernel; an unaligned gelu_inp gets our GELU and bias-gradient
// kernels; a weight gradient's BGRADB sees unaligned operands), and which epilogues run fused
// on aligned ones. Transposes, bias, GELU, accumulation into act and f32, K = 0 and odd shapes
// against the CPU are in the parity tables (parity_cases.h).
#include <map>
#include <string>
#include <vector>

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

// Every refused epilogue falls back to the same result, so only the backend's count tells a
// fusion that ran from one cuBLASLt refused. On bf16 with aligned operands, the epilogues that
// cuBLASLt documents for these type mixes must run: BIAS, GELU_AUX_BIAS, the residual as C and
// BGRADB (f32 D and bias); the MLP's dX takes DGELU_BGRAD, or DGELU where the f32 bias gradient
// beside a bf16 D is refused. The message lists what ran.
TEST_CASE("matmul: the bf16 epilogues run fused on aligned operands") {
  Rig rig = make_rig(Precision::bf16);
  const int64_t M = 64, N = 96, K = 48;
  Tensors gpu(*rig.gpu);
  auto t = [&](std::vector<int64_t> shape, uint64_t seed, DType dtype) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return gpu.upload(rounded(random_floats(size_t(n), seed), dtype), dtype, shape);
  };
  const DType bf = DType::bf16;
  Tensor a = t({M, K}, 1, bf), b = t({N, K}, 2, bf), bias = t({N}, 3, bf), residual = t({M, N}, 4, bf);
  Tensor out = gpu.alloc(bf, {M, N}), gelu = gpu.alloc(bf, {M, N});
  rig.gpu->matmul(out, a, b, kN, kT, bias, kOver, Tensor{});
  rig.gpu->matmul(out, a, b, kN, kT, bias, kOver, gelu);
  rig.gpu->matmul_residual(gelu, a, b, kN, kT, bias, residual);
  // The MLP's dX: dout (M, K) x fcprojw (K, N), times gelu'(pre-activation out); fcb's gradient.
  Tensor dfch = gpu.alloc(bf, {M, N}), dbias = t({N}, 5, DType::f32), w = t({K, N}, 6, bf);
  rig.gpu->matmul_gelu_backward(dfch, a, w, kN, kN, out, dbias);
  // A weight gradient: dweight (K, N) f32 += dout^T (K, M) inp (M, N), dbias_a (K).
  Tensor dw = t({K, N}, 7, DType::f32), dba = t({K}, 8, DType::f32);
  rig.gpu->linear_weight_backward(dw, dba, a, residual);
  rig.gpu->synchronize();

  const std::map<std::string, int64_t> ran = cuda_backend_matmul_epilogues(*rig.gpu);
  std::string listed;
  for (const auto& [name, count] : ran) listed += " " + name + "=" + std::to_string(count);
  MESSAGE("cuBLASLt epilogues that ran:" << listed);
  const auto count = [&](const char* name) { return ran.count(name) ? ran.at(name) : 0; };
  CHECK(count("BIAS") == 1);
  CHECK(count("GELU_AUX_BIAS") == 1);
  CHECK(count("BIAS+C") == 1);
  CHECK(count("DGELU_BGRAD") + count("DGELU") == 1);
  CHECK(count("BGRADB") == 1);
  CHECK(count("DEFAULT") == 0);
}

}  // namespace
}  // namespace trainer::testing
