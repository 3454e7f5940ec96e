// CUDA matmul (cuBLASLt) against the CPU backend: every transpose combination, bias, the GELU
// output (fused epilogue where bf16 and N % 8 == 0, a separate kernel otherwise), accumulation
// into act and into f32 (how weight gradients are formed), odd shapes.
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

struct Case {
  int64_t M, N, K;
  Transpose ta, tb;
  bool bias, gelu;
  Accumulate mode;
  bool out_f32;
};

constexpr Transpose kN = Transpose::none;
constexpr Transpose kT = Transpose::transpose;
constexpr Accumulate kOver = Accumulate::overwrite;
constexpr Accumulate kAdd = Accumulate::add;

const Case kCases[] = {
    {7, 5, 3, kN, kN, false, false, kOver, false},     {1, 1, 1, kN, kT, true, false, kOver, false},
    {64, 96, 48, kN, kT, true, false, kOver, false},   {64, 96, 48, kN, kT, true, true, kOver, false},
    {64, 96, 48, kN, kT, false, true, kOver, false},   {33, 65, 17, kN, kT, true, true, kOver, false},
    {48, 40, 64, kT, kN, false, false, kAdd, true},    {37, 19, 53, kT, kN, false, false, kAdd, true},
    {30, 20, 50, kN, kN, false, false, kAdd, false},   {30, 20, 50, kT, kT, true, false, kOver, false},
    {256, 768, 128, kN, kN, false, false, kOver, false}, {128, 64, 256, kT, kN, false, false, kAdd, true},
};

TEST_CASE("matmul matches the CPU") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (const Case& c : kCases) {
      CAPTURE(rig.label);
      CAPTURE(c.M);
      CAPTURE(c.N);
      CAPTURE(c.K);
      CAPTURE(int(c.ta));
      CAPTURE(int(c.tb));
      CAPTURE(c.bias);
      CAPTURE(c.gelu);
      CAPTURE(int(c.mode));
      CAPTURE(c.out_f32);
      Tensors cpu(*rig.cpu), gpu(*rig.gpu);
      const DType out_type = c.out_f32 ? DType::f32 : rig.act;
      const int64_t a_rows = c.ta == kN ? c.M : c.K, a_cols = c.ta == kN ? c.K : c.M;
      const int64_t b_rows = c.tb == kN ? c.K : c.N, b_cols = c.tb == kN ? c.N : c.K;
      const auto a = rounded(random_floats(c.M * c.K, 81 + c.M), rig.act);
      const auto b = rounded(random_floats(c.K * c.N, 82 + c.N), rig.act);
      const auto bias = rounded(random_floats(c.N, 83), rig.act);
      const auto out0 = rounded(random_floats(c.M * c.N, 84), out_type);

      Tensor cout = cpu.upload(out0, DType::f32, {c.M, c.N});
      Tensor cgelu = c.gelu ? cpu.alloc(DType::f32, {c.M, c.N}) : Tensor{};
      rig.cpu->matmul(cout, cpu.upload(a, DType::f32, {a_rows, a_cols}), cpu.upload(b, DType::f32, {b_rows, b_cols}),
                      c.ta, c.tb, c.bias ? cpu.upload(bias, DType::f32, {c.N}) : Tensor{}, c.mode, cgelu);

      Tensor gout = c.mode == kAdd ? gpu.upload(out0, out_type, {c.M, c.N}) : gpu.poisoned(out_type, {c.M, c.N});
      Tensor ggelu = c.gelu ? gpu.poisoned(out_type, {c.M, c.N}) : Tensor{};
      rig.gpu->matmul(gout, gpu.upload(a, rig.act, {a_rows, a_cols}), gpu.upload(b, rig.act, {b_rows, b_cols}), c.ta,
                      c.tb, c.bias ? gpu.upload(bias, rig.act, {c.N}) : Tensor{}, c.mode, ggelu);
      // fp32: the summation order differs from OpenBLAS's over K terms. f32 outputs from bf16
      // inputs: exact products, f32 sums. bf16 outputs: one bf16 rounding.
      const double tol = c.out_f32 ? 5 * kTolSum : (p == Precision::bf16 ? rig.tol : 5 * kTolF32);
      check_close(gpu.read(gout), cpu.read(cout), tol, "matmul out");
      if (c.gelu) check_close(gpu.read(ggelu), cpu.read(cgelu), p == Precision::bf16 ? rig.tol : 5 * kTolF32, "matmul gelu_out");
    }
  }
}

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
  }
}

}  // namespace
}  // namespace trainer::testing
