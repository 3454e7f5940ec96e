// The emulated cuDNN (cudnn_emu.cpp): first small graphs built with kernels/cuda/cudnn_graph.h
// and checked against values worked by hand from the backend API's rules (so that the emulator
// cannot share a misreading with cudnn_attention.cpp and still pass), and what the API refuses;
// then cudnn_attention.cpp under the versions and refusals its rules name: cuDNN 9.10.0 (known
// bugs), 9.5 (-FLT_MAX for the mask, T a multiple of 128 for the backward, the dQ accumulator
// zeroed by us: the emulated engine adds into it before 9.6), plans without a workspace, and
// no engine at each stage of the build. test_cuda_cudnn_attention.cpp's own
// cases run on the emulator as well (test_cuda_emu).
#include <cudnn.h>
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/errors.h"
#include "kernels/cuda/cuda_workspace.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/cudnn_graph.h"
#include "tests/kernels/cuda/cudnn_attention_cases.h"
#include "tests/kernels/cuda_emu/cudnn_emu.h"

namespace trainer::testing {
namespace {

using cuda::CudnnGraph;
using cuda::CudnnTensorKind;
using Uid = CudnnGraph::Uid;

// Puts the emulator back as it starts, whatever a case set.
struct EmuSettings {
  ~EmuSettings() {
    emu::cudnn::set_version(91900);
    emu::cudnn::set_refusal(emu::cudnn::Refusal::none);
    emu::cudnn::set_workspace_bytes(4096);
  }
};

// A handle on a stream, device buffers of f32, and a workspace.
struct Device {
  cudaStream_t stream = nullptr;
  cudnnHandle_t handle = nullptr;
  std::vector<void*> buffers;
  Device() {
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetStream(handle, stream) == CUDNN_STATUS_SUCCESS);
  }
  ~Device() {
    for (void* p : buffers) cudaFree(p);
    cudnnDestroy(handle);
    cudaStreamDestroy(stream);
  }
  float* upload(const std::vector<float>& v) {
    void* p = nullptr;
    REQUIRE(cudaMalloc(&p, v.size() * sizeof(float) + 64) == cudaSuccess);
    buffers.push_back(p);
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    return static_cast<float*>(p);
  }
  std::vector<float> read(const float* p, size_t n) {
    std::vector<float> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
  void* workspace(const CudnnGraph& g) {
    return upload(std::vector<float>(size_t(g.workspace_bytes() / 4 + 1), 0.0f));
  }
};

cuda::Dims4 dense(const cuda::Dims4& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

TEST_CASE("emulated cuDNN: a grouped matmul, a transposing reshape and grouped sums, as the API defines them") {
  Device dev;
  // a (1, 4, 2, 3) @ b (1, 2, 3, 2): head h of c takes b's head h / 2 (consecutive groups).
  std::vector<float> a(24), b(12);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) - 2.0f;
  CudnnGraph g;
  const Uid ua = g.tensor({1, 4, 2, 3}, dense({1, 4, 2, 3}), CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  const Uid ub = g.tensor({1, 2, 3, 2}, dense({1, 2, 3, 2}), CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  const Uid uc = g.tensor({1, 4, 2, 2}, dense({1, 4, 2, 2}), CUDNN_DATA_FLOAT, CudnnTensorKind::virtual_);
  g.matmul(ua, ub, uc);
  // ct: c viewed transposed, (1, 4, 2, 2) with the last two strides swapped, kept in f32.
  const Uid uct = g.tensor({1, 4, 2, 2}, {16, 4, 1, 2}, CUDNN_DATA_FLOAT, CudnnTensorKind::virtual_);
  g.reshape(uc, uct);
  const Uid ut = g.tensor({1, 4, 2, 2}, dense({1, 4, 2, 2}), CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, uct, ut);
  // s: ct summed over head pairs {0, 1} and {2, 3}; m: c's row maxima.
  const Uid us = g.tensor({1, 2, 2, 2}, dense({1, 2, 2, 2}), CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, uct, us);
  const Uid um = g.tensor({1, 4, 2, 1}, dense({1, 4, 2, 1}), CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, uc, um);
  REQUIRE(g.build(dev.handle));
  float* pa = dev.upload(a);
  float* pb = dev.upload(b);
  float* pt = dev.upload(std::vector<float>(16, NAN));
  float* ps = dev.upload(std::vector<float>(8, NAN));
  float* pm = dev.upload(std::vector<float>(8, NAN));
  g.execute(dev.handle, {ua, ub, ut, us, um}, {pa, pb, pt, ps, pm}, dev.workspace(g));
  const std::vector<float> t = dev.read(pt, 16), s = dev.read(ps, 8), m = dev.read(pm, 8);
  for (int h = 0; h < 4; ++h) {
    for (int i = 0; i < 2; ++i) {
      float row_max = -INFINITY;
      for (int j = 0; j < 2; ++j) {
        float c = 0;  // c[h][i][j] = sum_k a[h][i][k] b[h / 2][k][j]
        for (int k = 0; k < 3; ++k) c += a[size_t(h * 6 + i * 3 + k)] * b[size_t((h / 2) * 6 + k * 2 + j)];
        CHECK(t[size_t(h * 4 + j * 2 + i)] == c);  // t[h][j][i] = c[h][i][j]
        row_max = std::max(row_max, c);
      }
      CHECK(m[size_t(h * 2 + i)] == row_max);
    }
  }
  for (int p = 0; p < 2; ++p)
    for (int e = 0; e < 4; ++e) CHECK(s[size_t(p * 4 + e)] == t[size_t(2 * p * 4 + e)] + t[size_t((2 * p + 1) * 4 + e)]);
}

TEST_CASE("emulated cuDNN: a causal mask from generated indices, scalars by value and bf16 rounding") {
  Device dev;
  const cuda::Dims4 d{1, 1, 3, 3};
  std::vector<float> x(9);
  for (size_t i = 0; i < 9; ++i) x[i] = 1.0f + float(i) / 512.0f;  // 1 + i 2^-9: bf16 keeps even i only
  CudnnGraph g;
  const Uid ux = g.tensor(d, dense(d), CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  const Uid fill = g.scalar(), scale = g.scalar();
  const Uid row = g.tensor(d, dense(d), CUDNN_DATA_INT32, CudnnTensorKind::virtual_);
  const Uid col = g.tensor(d, dense(d), CUDNN_DATA_INT32, CudnnTensorKind::virtual_);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, ux, row, CudnnGraph::kNone, CudnnGraph::kNone, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, ux, col, CudnnGraph::kNone, CudnnGraph::kNone, 3);
  const Uid keep = g.tensor(d, dense(d), CUDNN_DATA_BOOLEAN, CudnnTensorKind::virtual_);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, keep, col);
  const Uid scaled = g.tensor(d, dense(d), CUDNN_DATA_FLOAT, CudnnTensorKind::virtual_);
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, ux, scaled, scale);
  const Uid uy = g.tensor(d, dense(d), CUDNN_DATA_BFLOAT16, CudnnTensorKind::device);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scaled, uy, fill, keep);
  REQUIRE(g.build(dev.handle));
  float* px = dev.upload(x);
  float* py = dev.upload(std::vector<float>(5, NAN));  // 9 bf16 values
  float fill_value = -7.0f, scale_value = 2.0f;
  g.execute(dev.handle, {ux, fill, scale, uy}, {px, &fill_value, &scale_value, py}, dev.workspace(g));
  fill_value = scale_value = 0.0f;  // by-value scalars are read at the call, not when the work runs
  std::vector<uint16_t> y(9);
  REQUIRE(cudaMemcpy(y.data(), py, 18, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      const float want = i >= j ? f32_from_bf16(bf16_from_f32(2.0f * x[size_t(i * 3 + j)])) : -7.0f;
      CHECK(f32_from_bf16(y[size_t(i * 3 + j)]) == want);
    }
}

TEST_CASE("emulated cuDNN refuses what the backend API does") {
  Device dev;
  CudnnGraph g;
  const Uid ux = g.tensor({1, 1, 2, 2}, {4, 4, 2, 1}, CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  const Uid uy = g.tensor({1, 1, 2, 2}, {4, 4, 2, 1}, CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  g.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, ux, uy);
  REQUIRE(g.build(dev.handle));
  float* px = dev.upload({0, 0, 0, 0});
  float* py = dev.upload({0, 0, 0, 0});
  void* ws = dev.workspace(g);
  // A tensor the plan reads that the variant pack does not name; a misaligned pointer (the
  // descriptors promise 16 bytes); no workspace where the plan asks for one.
  CHECK_THROWS_WITH_AS(g.execute(dev.handle, {ux}, {px}, ws), doctest::Contains("lacks tensor"), std::runtime_error);
  CHECK_THROWS_WITH_AS(g.execute(dev.handle, {ux, uy}, {px + 1, py}, ws), doctest::Contains("MISALIGNED"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(g.execute(dev.handle, {ux, uy}, {px, py}, nullptr), doctest::Contains("workspace"),
                       std::runtime_error);
  g.execute(dev.handle, {ux, uy}, {px, py}, ws);
  CHECK(dev.read(py, 4) == std::vector<float>{1, 1, 1, 1});
  // An attribute set with another type than the header gives it.
  cudnnBackendDescriptor_t t = nullptr;
  REQUIRE(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t) == CUDNN_STATUS_SUCCESS);
  const int32_t dims32[4] = {1, 1, 2, 2};
  CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT32, 4, dims32) ==
        CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
  CHECK(cudnnBackendFinalize(t) == CUDNN_STATUS_BAD_PARAM);  // nothing set
  cudnnBackendDestroyDescriptor(t);
  // A virtual tensor nobody writes.
  CudnnGraph orphan;
  const Uid v = orphan.tensor({1, 1, 1, 4}, {4, 4, 4, 1}, CUDNN_DATA_FLOAT, CudnnTensorKind::virtual_);
  const Uid o = orphan.tensor({1, 1, 1, 4}, {4, 4, 4, 1}, CUDNN_DATA_FLOAT, CudnnTensorKind::device);
  orphan.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, v, o);
  CHECK_THROWS_WITH_AS(orphan.build(dev.handle), doctest::Contains("no producer"), std::runtime_error);
}

// ---- cudnn_attention.cpp's version rules and refusals ----

using namespace cudnn_attention;

// The CPU's forward (and backward) next to cudnn's, with test_cuda_cudnn_attention.cpp's
// tolerances (cudnn_attention_cases.h says where they come from).
void check_against_cpu(Backend& gpu, const Shape& s, uint64_t seed, bool backward) {
  auto cpu = make_cpu_backend();
  const Case c = make_case(*cpu, s, seed);
  const int64_t C = s.H * s.D;
  Tensors g(gpu);
  Tensor gq = g.upload(c.qkv, DType::bf16, {s.B, s.T, s.width()});
  Tensor gout = g.poisoned(DType::bf16, {s.B, s.T, C}), glse = g.poisoned(DType::f32, {s.B, s.H, s.T});
  gpu.attention_forward(gout, glse, gq, int(s.H), int(s.Hkv));
  check_close(g.read(gout), c.want.out, kTol, "out");
  check_close(g.read(glse), c.want.lse, 1e-3, "lse");
  if (!backward) return;
  Tensor gd = g.poisoned(DType::bf16, {s.B, s.T, s.width()});
  gpu.attention_backward(gd, g.upload(c.dout, DType::bf16, {s.B, s.T, C}), gq, gout, glse, int(s.H), int(s.Hkv));
  check_close(g.read(gd), c.want.dqkv, kBackwardTol, "dqkv");
}

TEST_CASE("cudnn attention: cuDNN 9.10.0 and 9.10.1 are refused by name") {
  EmuSettings restore;
  for (size_t version : {size_t(91000), size_t(91001)}) {
    emu::cudnn::set_version(version);
    CHECK_THROWS_WITH_AS(make_cudnn_backend(), doctest::Contains("9.10.0 and 9.10.1"), ConfigError);
  }
}

TEST_CASE("cudnn attention on cuDNN 9.5: -FLT_MAX masks, the backward needs T a multiple of 128") {
  EmuSettings restore;
  emu::cudnn::set_version(90500);
  CHECK(!cuda::cudnn_backward_supported(100));
  CHECK(cuda::cudnn_backward_supported(256));
  auto gpu = make_cudnn_backend();
  check_against_cpu(*gpu, {1, 256, 4, 2, 64}, 700, true);
  check_against_cpu(*gpu, {2, 100, 2, 2, 64}, 710, false);
  Tensors g(*gpu);
  const Shape s{1, 100, 2, 2, 64};
  Tensor q = g.upload(random_floats(s.B * s.T * s.width(), 720), DType::bf16, {s.B, s.T, s.width()});
  Tensor out = g.poisoned(DType::bf16, {s.B, s.T, 128}), lse = g.poisoned(DType::f32, {s.B, s.H, s.T});
  gpu->attention_forward(out, lse, q, 2, 2);
  Tensor dqkv = g.poisoned(DType::bf16, {s.B, s.T, s.width()});
  CHECK_THROWS_WITH_AS(gpu->attention_backward(dqkv, g.poisoned(DType::bf16, {s.B, s.T, 128}), q, out, lse, 2, 2),
                       doctest::Contains("before 9.15.1 it needs a multiple of 128"), ConfigError);
}

TEST_CASE("cudnn attention on cuDNN 9.5 with dQ accumulated: we zero the accumulator, and it matches") {
  EmuSettings restore;
  emu::cudnn::set_version(90500);
  auto gpu = make_cudnn_backend();  // for its stream and memory
  cuda::DeviceMemory memory;
  cudaStream_t stream = cuda_backend_stream(*gpu);
  cuda::Workspace workspace(memory, stream);
  const cuda::Context ctx{stream, &workspace};
  cuda::CudnnAttention attention(stream, cuda::CudnnDq::accumulate);
  auto cpu = make_cpu_backend();
  const Shape s{1, 128, 2, 1, 64};
  const int64_t C = s.H * s.D;
  const Case k = make_case(*cpu, s, 730);
  Tensors g(*gpu);
  Tensor gq = g.upload(k.qkv, DType::bf16, {s.B, s.T, s.width()});
  Tensor gout = g.poisoned(DType::bf16, {s.B, s.T, C}), glse = g.poisoned(DType::f32, {s.B, s.H, s.T});
  attention.forward(ctx, AttentionForwardOp{gout, glse, gq, int(s.H), int(s.Hkv)});
  Tensor gd = g.poisoned(DType::bf16, {s.B, s.T, s.width()});
  attention.backward(ctx, AttentionBackwardOp{gd, g.upload(k.dout, DType::bf16, {s.B, s.T, C}), gq, gout, glse,
                                              int(s.H), int(s.Hkv)});
  check_close(g.read(gd), k.want.dqkv, kBackwardTol, "dqkv (accumulated dQ, cuDNN 9.5)");
}

TEST_CASE("cudnn attention with plans that need no workspace (as many real ones report)") {
  EmuSettings restore;
  emu::cudnn::set_workspace_bytes(0);
  auto gpu = make_cudnn_backend();
  check_against_cpu(*gpu, {2, 64, 4, 2, 64}, 750, true);
}

TEST_CASE("cudnn attention: no engine at any stage of the build is a configuration error saying where") {
  EmuSettings restore;
  using emu::cudnn::Refusal;
  const std::pair<Refusal, const char*> stages[] = {
      {Refusal::graph_finalize, "the operation graph's finalize: CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN"},
      {Refusal::heuristics_empty, "the heuristics offered no engine"},
      {Refusal::plans_all_refused, "none of the 2 engines the heuristics offered finalized"}};
  for (const auto& [refusal, where] : stages) {
    CAPTURE(where);
    emu::cudnn::set_refusal(refusal);
    auto gpu = make_cudnn_backend();
    Tensors g(*gpu);
    const Shape s{1, 16, 2, 2, 64};
    Tensor q = g.upload(random_floats(s.B * s.T * s.width(), 740), DType::bf16, {s.B, s.T, s.width()});
    Tensor out = g.poisoned(DType::bf16, {s.B, s.T, 128}), lse = g.poisoned(DType::f32, {s.B, s.H, s.T});
    const std::string want =
        std::string("cudnn has no engine for the forward pass at B=1 T=16 H=2 Hkv=2 D=64 with cuDNN 9.19.0 on this GPU (") +
        where;
    CHECK_THROWS_WITH_AS(gpu->attention_forward(out, lse, q, 2, 2), doctest::Contains(want.c_str()), ConfigError);
  }
}

}  // namespace
}  // namespace trainer::testing
