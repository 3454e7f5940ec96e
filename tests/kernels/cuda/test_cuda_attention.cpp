// CUDA causal attention, the special cases: an unaligned qkv takes the scalar kernels instead of
// the tensor-core ones and still matches the CPU; train.attention: cudnn without cuDNN in the
// build is a configuration error (its tests with cuDNN are in test_cuda_cudnn_attention.cpp).
// The kernels against the CPU on every path (tensor cores for bf16 with head size 64 and 128,
// scalar otherwise, T = 1, lengths off the tiles, determinism) are in the parity tables.
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

struct Shape {
  int64_t B, T, H, D;
};

// bf16 rounds P and dS to bf16 inside the products as well as the outputs.
double attention_tol(Precision p) { return p == Precision::bf16 ? 3e-2 : 5e-5; }

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

#ifndef TRAINER_HAVE_CUDNN
TEST_CASE("attention cudnn in a build without cuDNN is a configuration error and never a silent fallback") {
  BackendOptions options;
  options.device = DeviceChoice::cuda;
  options.precision = Precision::bf16;
  options.attention = AttentionImpl::cudnn;
  CHECK_THROWS_AS(make_cuda_backend(options), ConfigError);
}
#endif

}  // namespace
}  // namespace trainer::testing
