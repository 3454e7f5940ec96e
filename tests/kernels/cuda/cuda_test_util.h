// Helpers for the CUDA op tests: a CPU backend (the reference) next to a CUDA backend of each
// precision, and random tokens. Tensors on either backend, bf16 rounding and the comparisons
// are in tests/kernels/device_tensors.h.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/base/errors.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/kernels/device_tensors.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

struct Rig {
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<Backend> gpu;
  Precision precision = Precision::fp32;
  DType act = DType::f32;
  double tol = kTolF32;
  const char* label = "fp32";
};

inline Rig make_rig(Precision precision, bool stochastic_rounding = false) {
  Rig r;
  r.cpu = make_cpu_backend();
  BackendOptions options;
  options.device = DeviceChoice::cuda;
  options.precision = precision;
  options.stochastic_rounding = stochastic_rounding;
  r.gpu = make_cuda_backend(options);
  r.precision = precision;
  r.act = precision == Precision::bf16 ? DType::bf16 : DType::f32;
  r.tol = precision == Precision::bf16 ? kTolBf16 : kTolF32;
  r.label = precision == Precision::bf16 ? "bf16" : "fp32";
  return r;
}

inline std::vector<Precision> all_precisions() { return {Precision::fp32, Precision::bf16}; }

inline std::vector<int32_t> random_tokens(size_t n, int32_t vocab, uint64_t seed) {
  std::vector<float> u = random_floats(n, seed, 0.0f, 1.0f);
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = std::min<int32_t>(vocab - 1, static_cast<int32_t>(u[i] * float(vocab)));
  return t;
}

}  // namespace trainer::testing
