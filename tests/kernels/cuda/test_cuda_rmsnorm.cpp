// CUDA RMSNorm, the special case: the weight gradient over many row blocks (the block-order
// second pass) is the same bits run to run and matches the CPU. RMSNorm and head RMSNorm against
// the CPU on odd shapes, unaligned views and in place are in the parity tables
// (parity_rmsnorm_cases.h).
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("rmsnorm weight gradient over many row blocks is deterministic and matches the CPU") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(rig.label);
    const int64_t N = 3000, C = 72;  // 94 blocks of 32 rows: the second pass's 32 thread rows each add several
    Tensors cpu(*rig.cpu), gpu(*rig.gpu);
    const auto x = rounded(random_floats(N * C, 311, -2, 2), rig.act);
    const auto w = rounded(random_floats(C, 312, 0.5f, 1.5f), rig.act);
    const auto dout = rounded(random_floats(N * C, 313), rig.act);
    Tensor cx = cpu.upload(x, DType::f32, {N, C}), cw = cpu.upload(w, DType::f32, {C});
    Tensor crstd = cpu.alloc(DType::f32, {N});
    rig.cpu->rmsnorm_forward(cpu.alloc(DType::f32, {N, C}), crstd, cx, cw, 1e-5f);
    Tensor cdw = cpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
    rig.cpu->rmsnorm_backward(cpu.alloc(DType::f32, {N, C}), cdw, cpu.upload(dout, DType::f32, {N, C}), cx, cw, crstd,
                              Accumulate::overwrite);
    Tensor gx = gpu.upload(x, rig.act, {N, C}), gw = gpu.upload(w, rig.act, {C}), gd = gpu.upload(dout, rig.act, {N, C});
    Tensor grstd = gpu.upload(cpu.read(crstd), DType::f32, {N}), gdinp = gpu.alloc(rig.act, {N, C});
    std::vector<float> first;
    for (int run = 0; run < 2; ++run) {
      Tensor gdw = gpu.upload(std::vector<float>(C, 0.0f), DType::f32, {C});
      rig.gpu->rmsnorm_backward(gdinp, gdw, gd, gx, gw, grstd, Accumulate::overwrite);
      if (run == 0) {
        first = gpu.read(gdw);
        check_close(first, cpu.read(cdw), kTolSum, "dweight");
      } else {
        check_equal(gpu.read(gdw), first, "dweight rerun");
      }
    }
  }
}

}  // namespace
}  // namespace trainer::testing
