// CUDA Llama ops, the special cases: rope of one token at pos_offset p (a KV-cache step) is, bit
// for bit, row p of rope over the whole sequence, and rope_backward undoes rope_forward to the
// act dtype's rounding; RMSNorm's weight gradient over many row blocks (the block-order second
// pass) is the same bits run to run and matches the CPU. RMSNorm, head RMSNorm, rope and SwiGLU
// against the CPU on odd shapes, unaligned views and in place are in the parity tables
// (parity_llama_cases.h).
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("rope of one token at pos_offset p is row p of rope over the sequence") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    CAPTURE(rig.label);
    const int64_t T = 40, H = 4, Hkv = 2, D = 64, W = (H + 2 * Hkv) * D;
    Tensors gpu(*rig.gpu);
    const auto x = rounded(random_floats(T * W, 301, -2, 2), rig.act);
    std::vector<float> freq(D / 2);
    for (int64_t i = 0; i < D / 2; ++i) freq[size_t(i)] = float(std::pow(500000.0, -2.0 * double(i) / double(D)));
    Tensor inv_freq = gpu.upload(freq, DType::f32, {D / 2});
    Tensor all = gpu.poisoned(rig.act, {1, T, W});
    rig.gpu->rope_forward(all, gpu.upload(x, rig.act, {1, T, W}), inv_freq, int(H), int(Hkv), 0);
    const std::vector<float> whole = gpu.read(all);
    for (int64_t pos : {int64_t(0), int64_t(1), int64_t(39)}) {
      CAPTURE(pos);
      const std::vector<float> row(x.begin() + pos * W, x.begin() + (pos + 1) * W);
      Tensor one = gpu.upload(row, rig.act, {1, 1, W});
      rig.gpu->rope_forward(one, one, inv_freq, int(H), int(Hkv), pos);  // in place
      check_equal(gpu.read(one), std::vector<float>(whole.begin() + pos * W, whole.begin() + (pos + 1) * W),
                  "one token at its position");
    }
    Tensor back = gpu.poisoned(rig.act, {1, T, W});
    rig.gpu->rope_backward(back, all, inv_freq, int(H), int(Hkv), 0);
    // fp32: cosf and sinf are within an ulp or two, so the two rotations undo each other to ~1e-7.
    check_close(gpu.read(back), x, p == Precision::bf16 ? 2e-2 : 1e-5, "backward(forward(x))");
  }
}

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
