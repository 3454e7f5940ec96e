// train.attention: cudnn against the CPU, shared by test_cuda_cudnn_attention.cpp (on a GPU,
// and on the CUDA emulator's cuDNN) and the emulator's own test_cudnn_emu.cpp: the shapes'
// type, bf16-exact random inputs with the CPU's answer, the cudnn backend, and the tolerances
// with where they come from. Built only with cuDNN.
#pragma once
#ifdef TRAINER_HAVE_CUDNN

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing::cudnn_attention {

struct Shape {
  int64_t B, T, H, Hkv, D;
  int64_t width() const { return (H + 2 * Hkv) * D; }
};

// bf16 rounds P and dS to bf16 inside the products as well as the outputs (as for our kernels).
constexpr double kTol = 3e-2;
// The backward also starts from cuDNN's own bf16 O, and with grouped heads rounds each query
// head's dK and dV to bf16 before their sum over the group (cudnn-frontend's "fullhead"
// tensors, in the I/O type), which costs most where the heads' terms cancel. On the CUDA
// emulator's cuDNN (test_cuda_emu) the worst element of these cases is 8.4% off the f32 CPU
// (a dV of {1, 256, 4, 2, 64}), the others 2.5-4.0%, and the mean error 0.21-0.24%; our own
// kernels' worst on the same inputs is 4.0%. A wrong term moves the mean by far more.
constexpr double kBackwardTol = 0.1;
constexpr double kBackwardMeanTol = 1e-2;

// The mean error against the mean magnitude, sum |got - want| / sum |want|: rounding leaves it
// well under the worst element's, a wrong term does not.
inline void check_mean_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  double err = 0, mag = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += std::fabs(double(got[i]) - double(want[i]));
    mag += std::fabs(double(want[i]));
  }
  INFO(what << ": mean error " << err / mag << " of the mean magnitude");
  CHECK(err <= tol * mag);
}

inline std::unique_ptr<Backend> make_cudnn_backend(Precision precision = Precision::bf16) {
  BackendOptions options;
  options.device = DeviceChoice::cuda;
  options.precision = precision;
  options.attention = AttentionImpl::cudnn;
  return make_cuda_backend(options);
}

struct Reference {
  std::vector<float> out, lse, dqkv;
};

inline Reference cpu_reference(Backend& cpu, const Shape& s, const std::vector<float>& qkv, const std::vector<float>& dout) {
  Tensors t(cpu);
  const int64_t C = s.H * s.D;
  Tensor q = t.upload(qkv, DType::f32, {s.B, s.T, s.width()});
  Tensor out = t.alloc(DType::f32, {s.B, s.T, C}), lse = t.alloc(DType::f32, {s.B, s.H, s.T});
  Tensor dqkv = t.alloc(DType::f32, {s.B, s.T, s.width()});
  cpu.attention_forward(out, lse, q, int(s.H), int(s.Hkv));
  cpu.attention_backward(dqkv, t.upload(dout, DType::f32, {s.B, s.T, C}), q, out, lse, int(s.H), int(s.Hkv));
  return {t.read(out), t.read(lse), t.read(dqkv)};
}

// bf16-exact random inputs and the CPU's answer for them.
struct Case {
  std::vector<float> qkv, dout;
  Reference want;
};
inline Case make_case(Backend& cpu, const Shape& s, uint64_t seed) {
  Case c;
  c.qkv = rounded(random_floats(s.B * s.T * s.width(), seed, -1.5f, 1.5f), DType::bf16);
  c.dout = rounded(random_floats(s.B * s.T * s.H * s.D, seed + 10), DType::bf16);
  c.want = cpu_reference(cpu, s, c.qkv, c.dout);
  return c;
}

}  // namespace trainer::testing::cudnn_attention

#endif  // TRAINER_HAVE_CUDNN
