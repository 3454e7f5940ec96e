// CUDA LayerNorm backward in place (dinp = dout: the column pass reads dout before any dinp of
// its block is written). The encoder and LayerNorm against the CPU, with their determinism,
// are in the parity tables (parity_cases.h).
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("layernorm backward allows dinp to alias dout") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(rig.label);
    const int64_t N = 70, C = 96;
    Tensors cpu(*rig.cpu), gpu(*rig.gpu);
    const auto x = rounded(random_floats(N * C, 71), rig.act);
    const auto w = rounded(random_floats(C, 72), rig.act);
    const auto dout = rounded(random_floats(N * C, 73), rig.act);
    Tensor cx = cpu.upload(x, DType::f32, {N, C}), cw = cpu.upload(w, DType::f32, {C});
    Tensor cmean = cpu.alloc(DType::f32, {N}), crstd = cpu.alloc(DType::f32, {N});
    rig.cpu->layernorm_forward(cpu.alloc(DType::f32, {N, C}), cmean, crstd, cx, cw, cpu.upload(w, DType::f32, {C}));
    Tensor cdinp = cpu.alloc(DType::f32, {N, C});
    Tensor cdw = cpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    Tensor cdb = cpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    rig.cpu->layernorm_backward(cdinp, cdw, cdb, cpu.upload(dout, DType::f32, {N, C}), cx, cw, cmean, crstd,
                                Accumulate::overwrite);
    Tensor gd = gpu.upload(dout, rig.act, {N, C});
    Tensor gdw = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    Tensor gdb = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    rig.gpu->layernorm_backward(gd, gdw, gdb, gd, gpu.upload(x, rig.act, {N, C}), gpu.upload(w, rig.act, {C}),
                                gpu.upload(cpu.read(cmean), DType::f32, {N}), gpu.upload(cpu.read(crstd), DType::f32, {N}),
                                Accumulate::overwrite);
    check_close(gpu.read(gd), cpu.read(cdinp), rig.tol, "aliased dinp");
    check_close(gpu.read(gdw), cpu.read(cdw), kTolSum, "aliased dweight");
    check_close(gpu.read(gdb), cpu.read(cdb), kTolSum, "aliased dbias");
  }
}

}  // namespace
}  // namespace trainer::testing
