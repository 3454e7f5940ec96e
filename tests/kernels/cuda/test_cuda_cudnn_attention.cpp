// train.attention: cudnn against the CPU: forward (out, lse) and backward (dqkv) for multi-head
// and grouped heads, head sizes 64 and 128, lengths off every tile (T = 1, 100, 130), with dQ
// both ways (direct, the backend's choice, and cuDNN's f32 accumulation); direct is bit-identical
// run to run; what cuDNN cannot take (fp32, a head size off its limits, a backward length the
// loaded cuDNN refuses: T = 1, and T off 128 before 9.15.1) is a configuration error.
// Built only with cuDNN; each case is skipped without a GPU (cuda_main.cpp), and runs on the CUDA
// emulator's cuDNN in test_cuda_emu.
#ifdef TRAINER_HAVE_CUDNN

#include "kernels/cuda/cuda_workspace.h"
#include "kernels/cuda/cudnn_attention.h"
#include "tests/kernels/cuda/cudnn_attention_cases.h"

namespace trainer::testing {
namespace {

using namespace cudnn_attention;

// Backward runs where cudnn_backward_supported says (T = 256 on every cuDNN; the others from
// 9.15.1), and elsewhere must be a ConfigError.
const Shape kShapes[] = {
    {2, 100, 4, 4, 64},   // multi-head, T off the tiles
    {1, 130, 4, 2, 128},  // grouped, D = 128
    {2, 64, 6, 2, 64},    // grouped, T on the tiles
    {1, 256, 4, 2, 64},   // grouped, T a multiple of 128
    {1, 1, 2, 1, 64},     // one token, multi-query: forward only
};

TEST_CASE("attention cudnn matches the CPU forward and backward (dQ written directly)") {
  auto cpu = make_cpu_backend();
  auto gpu = make_cudnn_backend();
  for (const Shape& s : kShapes) {
    CAPTURE(s.T);
    CAPTURE(s.Hkv);
    CAPTURE(s.D);
    const int64_t C = s.H * s.D;
    const Case c = make_case(*cpu, s, 300 + uint64_t(s.T));
    const Reference& want = c.want;
    Tensors g(*gpu);
    Tensor q = g.upload(c.qkv, DType::bf16, {s.B, s.T, s.width()});
    Tensor out = g.poisoned(DType::bf16, {s.B, s.T, C}), lse = g.poisoned(DType::f32, {s.B, s.H, s.T});
    gpu->attention_forward(out, lse, q, int(s.H), int(s.Hkv));
    check_close(g.read(out), want.out, kTol, "cudnn out");
    check_close(g.read(lse), want.lse, 1e-3, "cudnn lse");
    Tensor d = g.upload(c.dout, DType::bf16, {s.B, s.T, C});
    Tensor dqkv = g.poisoned(DType::bf16, {s.B, s.T, s.width()});
    if (!cuda::cudnn_backward_supported(s.T)) {
      CHECK_THROWS_AS(gpu->attention_backward(dqkv, d, q, out, lse, int(s.H), int(s.Hkv)), ConfigError);
      continue;
    }
    gpu->attention_backward(dqkv, d, q, out, lse, int(s.H), int(s.Hkv));
    const std::vector<float> first = g.read(dqkv);
    check_close(first, want.dqkv, kBackwardTol, "cudnn dqkv");
    check_mean_close(first, want.dqkv, kBackwardMeanTol, "cudnn dqkv");
    gpu->attention_backward(dqkv, d, q, out, lse, int(s.H), int(s.Hkv));
    check_equal(g.read(dqkv), first, "cudnn dqkv run to run");
  }
}

TEST_CASE("attention cudnn with dQ accumulated in f32 matches the CPU") {
  auto cpu = make_cpu_backend();
  auto gpu = make_cudnn_backend();  // for its stream and memory only
  cuda::DeviceMemory memory;
  cudaStream_t stream = cuda_backend_stream(*gpu);
  cuda::Workspace workspace(memory, stream);
  const cuda::Context ctx{stream, &workspace};
  cuda::CudnnAttention attention(stream, cuda::CudnnDq::accumulate);
  for (const Shape& s : kShapes) {
    CAPTURE(s.T);
    CAPTURE(s.Hkv);
    const int64_t C = s.H * s.D;
    const Case c = make_case(*cpu, s, 400 + uint64_t(s.T));
    Tensors g(*gpu);
    Tensor q = g.upload(c.qkv, DType::bf16, {s.B, s.T, s.width()});
    Tensor out = g.poisoned(DType::bf16, {s.B, s.T, C}), lse = g.poisoned(DType::f32, {s.B, s.H, s.T});
    attention.forward(ctx, AttentionForwardOp{out, lse, q, int(s.H), int(s.Hkv)});
    check_close(g.read(out), c.want.out, kTol, "cudnn out (own handle)");
    if (!cuda::cudnn_backward_supported(s.T)) continue;  // the refusal is checked above
    Tensor dqkv = g.poisoned(DType::bf16, {s.B, s.T, s.width()});
    attention.backward(ctx, AttentionBackwardOp{dqkv, g.upload(c.dout, DType::bf16, {s.B, s.T, C}), q, out, lse,
                                                int(s.H), int(s.Hkv)});
    const std::vector<float> got = g.read(dqkv);
    check_close(got, c.want.dqkv, kBackwardTol, "cudnn dqkv (accumulated dQ)");
    check_mean_close(got, c.want.dqkv, kBackwardMeanTol, "cudnn dqkv (accumulated dQ)");
  }
}

TEST_CASE("attention cudnn and the hand-written kernels share lse: cuDNN forward, flash backward") {
  const Shape s{1, 100, 4, 2, 64};
  const int64_t C = s.H * s.D;
  auto cudnn = make_cudnn_backend();
  Rig rig = make_rig(Precision::bf16);
  const Case k = make_case(*rig.cpu, s, 500);
  Tensors c(*cudnn), f(*rig.gpu);
  Tensor out = c.poisoned(DType::bf16, {s.B, s.T, C}), lse = c.poisoned(DType::f32, {s.B, s.H, s.T});
  cudnn->attention_forward(out, lse, c.upload(k.qkv, DType::bf16, {s.B, s.T, s.width()}), int(s.H), int(s.Hkv));
  Tensor dqkv = f.poisoned(DType::bf16, {s.B, s.T, s.width()});
  rig.gpu->attention_backward(dqkv, f.upload(k.dout, DType::bf16, {s.B, s.T, C}),
                              f.upload(k.qkv, DType::bf16, {s.B, s.T, s.width()}),
                              f.upload(c.read(out), DType::bf16, {s.B, s.T, C}),
                              f.upload(c.read(lse), DType::f32, {s.B, s.H, s.T}), int(s.H), int(s.Hkv));
  check_close(f.read(dqkv), k.want.dqkv, kTol, "flash backward from cudnn's lse");
}

TEST_CASE("attention cudnn refuses what it cannot run, naming the choice") {
  CHECK_THROWS_AS(make_cudnn_backend(Precision::fp32), ConfigError);
  auto gpu = make_cudnn_backend();
  Tensors g(*gpu);
  for (int64_t D : {int64_t(20), int64_t(256)}) {
    CAPTURE(D);
    const Shape s{1, 16, 2, 2, D};
    Tensor q = g.upload(random_floats(s.B * s.T * s.width(), 600), DType::bf16, {s.B, s.T, s.width()});
    Tensor out = g.poisoned(DType::bf16, {s.B, s.T, s.H * D}), lse = g.poisoned(DType::f32, {s.B, s.H, s.T});
    CHECK_THROWS_AS(gpu->attention_forward(out, lse, q, int(s.H)), ConfigError);
  }
}

}  // namespace
}  // namespace trainer::testing

#endif  // TRAINER_HAVE_CUDNN
