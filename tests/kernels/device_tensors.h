// Tensors on any backend for the kernel tests that compare two backends: owned buffers with
// host <-> device transfers and bf16 conversion, NaN-poisoned outputs (an element an op fails
// to write then fails the comparison), and tolerance checks relative to the size of the
// reference values. No CUDA here: the CPU-only tests use it too.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/base/bf16.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

// The values as the dtype stores them.
inline std::vector<float> rounded(std::vector<float> v, DType dtype) {
  if (dtype == DType::bf16)
    for (float& x : v) x = f32_from_bf16(bf16_from_f32(x));
  return v;
}

inline int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Owns the buffers of one test on one backend. `offset` > 0 places the tensor that many
// elements into its buffer, so it is not 16-byte aligned (exercises the scalar code paths).
class Tensors {
 public:
  explicit Tensors(Backend& backend) : backend_(backend) {}

  Tensor alloc(DType dtype, const std::vector<int64_t>& shape, int64_t offset = 0) {
    const int64_t n = numel_of(shape);
    buffers_.push_back(backend_.alloc(static_cast<size_t>(n + offset + 1) * dtype_size(dtype)));
    Tensor whole = buffers_.back().tensor(dtype, {n + offset});
    Tensor t = whole.flat(offset, offset + n);
    REQUIRE(shape.size() <= 4);
    t.ndim = static_cast<int>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    return t;
  }

  Tensor upload(const std::vector<float>& values, DType dtype, const std::vector<int64_t>& shape,
                int64_t offset = 0) {
    Tensor t = alloc(dtype, shape, offset);
    REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
    write(t, values);
    return t;
  }

  Tensor upload_i32(const std::vector<int32_t>& values, const std::vector<int64_t>& shape) {
    Tensor t = alloc(DType::i32, shape);
    REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
    backend_.copy_from_host(t.data, values.data(), values.size() * 4);
    return t;
  }

  // Filled with NaN.
  Tensor poisoned(DType dtype, const std::vector<int64_t>& shape, int64_t offset = 0) {
    Tensor t = alloc(dtype, shape, offset);
    write(t, std::vector<float>(static_cast<size_t>(t.numel()), NAN));
    return t;
  }

  void write(const Tensor& t, const std::vector<float>& values) {
    if (t.dtype == DType::bf16) {
      std::vector<uint16_t> h(values.size());
      for (size_t i = 0; i < h.size(); ++i) h[i] = bf16_from_f32(values[i]);
      backend_.copy_from_host(t.data, h.data(), h.size() * 2);
    } else {
      REQUIRE(t.dtype == DType::f32);
      backend_.copy_from_host(t.data, values.data(), values.size() * 4);
    }
  }

  std::vector<float> read(const Tensor& t) {
    std::vector<float> out(static_cast<size_t>(t.numel()));
    if (t.dtype == DType::bf16) {
      std::vector<uint16_t> h(out.size());
      backend_.copy_to_host(h.data(), t.data, h.size() * 2);
      for (size_t i = 0; i < h.size(); ++i) out[i] = f32_from_bf16(h[i]);
    } else {
      REQUIRE(t.dtype == DType::f32);
      backend_.copy_to_host(out.data(), t.data, out.size() * 4);
    }
    return out;
  }

 private:
  Backend& backend_;
  std::vector<Buffer> buffers_;
};

// Checks |got - want| <= rtol * (|want| + mean |want|) everywhere (NaN fails): relative where
// values are large, absolute at the scale of the data where they are near zero.
inline void check_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                        const std::string& what) {
  REQUIRE(got.size() == want.size());
  double mean_abs = 0;
  for (float w : want) mean_abs += std::fabs(double(w));
  mean_abs = want.empty() ? 0 : mean_abs / double(want.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i])) / (std::fabs(double(want[i])) + mean_abs + 1e-30);
    if (is_worse(err, worst)) {
      worst = err;
      at = i;
    }
  }
  INFO(what << ": worst relative error " << worst << " at " << at << " (got " << (got.empty() ? 0.f : got[at])
            << ", want " << (want.empty() ? 0.f : want[at]) << ", mean |want| " << mean_abs << ")");
  CHECK(worst <= rtol);
}

inline void check_equal(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  size_t first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], 4) != 0 && bad++ == 0) first = i;
  INFO(what << ": " << bad << " elements differ bitwise, first at " << first);
  CHECK(bad == 0);
}

// Tolerances: outputs in the activation dtype, and f32 outputs of long sums (parameter
// gradients, statistics), whose inputs both sides see identically.
constexpr double kTolF32 = 1e-5;
constexpr double kTolBf16 = 2e-2;
constexpr double kTolSum = 2e-5;

}  // namespace trainer::testing
