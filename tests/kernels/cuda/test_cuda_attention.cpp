// CUDA causal attention against the CPU backend: the tensor-core kernels (bf16, head size 64
// and 128) and the scalar kernels (fp32, other head sizes), sequence lengths that are not
// multiples of the tiles, T = 1. Backward runs from the CPU's out and lse so both sides see
// the same inputs, twice, to check determinism.
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

struct Shape {
  int64_t B, T, H, D;
};

const Shape kShapes[] = {{2, 37, 3, 64}, {1, 130, 2, 128}, {2, 17, 2, 40}, {1, 1, 1, 64},
                         {1, 64, 2, 64}, {1, 200, 1, 128}, {1, 45, 2, 96}, {2, 33, 1, 16}};

// bf16 rounds P and dS to bf16 inside the products as well as the outputs.
double attention_tol(Precision p) { return p == Precision::bf16 ? 3e-2 : 5e-5; }

TEST_CASE("attention forward and backward match the CPU") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    for (const Shape& s : kShapes) {
      CAPTURE(rig.label);
      CAPTURE(s.B);
      CAPTURE(s.T);
      CAPTURE(s.H);
      CAPTURE(s.D);
      Tensors cpu(*rig.cpu), gpu(*rig.gpu);
      const int64_t C = s.H * s.D;
      const int n_head = static_cast<int>(s.H);
      const auto qkv = rounded(random_floats(s.B * s.T * 3 * C, 101 + s.T, -1.5f, 1.5f), rig.act);
      const auto dout = rounded(random_floats(s.B * s.T * C, 102 + s.T), rig.act);

      Tensor cqkv = cpu.upload(qkv, DType::f32, {s.B, s.T, 3 * C});
      Tensor cout = cpu.alloc(DType::f32, {s.B, s.T, C});
      Tensor clse = cpu.alloc(DType::f32, {s.B, s.H, s.T});
      rig.cpu->attention_forward(cout, clse, cqkv, n_head);

      Tensor gqkv = gpu.upload(qkv, rig.act, {s.B, s.T, 3 * C});
      Tensor gout = gpu.poisoned(rig.act, {s.B, s.T, C});
      Tensor glse = gpu.poisoned(DType::f32, {s.B, s.H, s.T});
      rig.gpu->attention_forward(gout, glse, gqkv, n_head);
      check_close(gpu.read(gout), cpu.read(cout), attention_tol(p), "attention_forward out");
      check_close(gpu.read(glse), cpu.read(clse), p == Precision::bf16 ? 1e-3 : kTolF32, "attention_forward lse");

      const auto out = rounded(cpu.read(cout), rig.act);
      const auto lse = cpu.read(clse);
      Tensor cdqkv = cpu.alloc(DType::f32, {s.B, s.T, 3 * C});
      rig.cpu->attention_backward(cdqkv, cpu.upload(dout, DType::f32, {s.B, s.T, C}), cqkv,
                                  cpu.upload(out, DType::f32, {s.B, s.T, C}), clse, n_head);
      Tensor gdout = gpu.upload(dout, rig.act, {s.B, s.T, C});
      Tensor gout_in = gpu.upload(out, rig.act, {s.B, s.T, C});
      Tensor glse_in = gpu.upload(lse, DType::f32, {s.B, s.H, s.T});
      Tensor gdqkv = gpu.poisoned(rig.act, {s.B, s.T, 3 * C});
      rig.gpu->attention_backward(gdqkv, gdout, gqkv, gout_in, glse_in, n_head);
      const auto dqkv1 = gpu.read(gdqkv);
      check_close(dqkv1, cpu.read(cdqkv), attention_tol(p), "attention_backward dqkv");

      gpu.write(gdqkv, std::vector<float>(dqkv1.size(), NAN));
      rig.gpu->attention_backward(gdqkv, gdout, gqkv, gout_in, glse_in, n_head);
      check_equal(gpu.read(gdqkv), dqkv1, "attention_backward rerun");
    }
  }
}

TEST_CASE("attention with an unaligned qkv takes the scalar path and still matches") {
  Rig rig = make_rig(Precision::bf16);
  const Shape s{1, 50, 2, 64};
  const int64_t C = s.H * s.D;
  Tensors cpu(*rig.cpu), gpu(*rig.gpu);
  const auto qkv = rounded(random_floats(s.B * s.T * 3 * C, 111), rig.act);
  Tensor cout = cpu.alloc(DType::f32, {s.B, s.T, C});
  Tensor clse = cpu.alloc(DType::f32, {s.B, s.H, s.T});
  rig.cpu->attention_forward(cout, clse, cpu.upload(qkv, DType::f32, {s.B, s.T, 3 * C}), int(s.H));
  Tensor gout = gpu.poisoned(rig.act, {s.B, s.T, C}, 1);
  Tensor glse = gpu.poisoned(DType::f32, {s.B, s.H, s.T});
  rig.gpu->attention_forward(gout, glse, gpu.upload(qkv, rig.act, {s.B, s.T, 3 * C}, 1), int(s.H));
  check_close(gpu.read(gout), cpu.read(cout), attention_tol(Precision::bf16), "unaligned attention out");
  check_close(gpu.read(glse), cpu.read(clse), 1e-3, "unaligned attention lse");
}

TEST_CASE("attention cudnn is a configuration error and never a silent fallback") {
  BackendOptions options;
  options.device = DeviceChoice::cuda;
  options.attention = AttentionImpl::cudnn;
  CHECK_THROWS_AS(make_cuda_backend(options), ConfigError);
}

}  // namespace
}  // namespace trainer::testing
