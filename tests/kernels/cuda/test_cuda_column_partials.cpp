// add_column_partials (cuda_reduce.cu), the second pass of the norms' weight gradients, holds
// to its documented order bit for bit: thread row y of 32 sums partials y, y + 32, ... in that
// order, then the 32 sums are added in row order to dst. The norms' determinism across GPUs,
// and across changes to how the kernel loads its partials, rests on that order.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cuda/cuda_ops.h"
#include "tests/support/test_util.h"

namespace trainer::testing {
namespace {

// dst[c] + the documented order's sum of partial (count, C), in f32.
std::vector<float> column_sums_in_order(const std::vector<float>& dst, const std::vector<float>& partial,
                                        int64_t count, int64_t C) {
  std::vector<float> out(dst);
  for (int64_t c = 0; c < C; ++c) {
    float total = 0;
    for (int64_t y = 0; y < 32; ++y) {
      float acc = 0;
      for (int64_t g = y; g < count; g += 32) acc += partial[size_t(g * C + c)];
      total += acc;
    }
    out[size_t(c)] += total;
  }
  return out;
}

float* device_copy(const std::vector<float>& v) {
  float* p = nullptr;
  REQUIRE(cudaMalloc(&p, v.size() * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  return p;
}

std::vector<float> host_copy(const float* p, size_t n) {
  std::vector<float> v(n);
  REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("add_column_partials sums in its documented order, bit for bit, one sum or two in a launch") {
  const int64_t C = 40;  // a full and a partial block of 32 columns
  // 1 (a fused epilogue's bias gradient), under one thread row each, past one round of 16
  // loads per thread row (512), and gpt2-124m's 1366.
  for (int64_t count : {1, 31, 600, 1366}) {
    CAPTURE(count);
    const auto pa = random_floats(size_t(count * C), 510 + uint64_t(count), -1, 1);
    const auto pb = random_floats(size_t(count * C), 520 + uint64_t(count), -1, 1);
    const auto da = random_floats(size_t(C), 530), db = random_floats(size_t(C), 531);
    float *d_pa = device_copy(pa), *d_pb = device_copy(pb), *d_da = device_copy(da), *d_db = device_copy(db);
    const cuda::Context ctx{};
    cuda::add_column_partials(ctx, {d_da, d_pa}, {d_db, d_pb}, count, C);
    CHECK(bitwise_equal(host_copy(d_da, size_t(C)), column_sums_in_order(da, pa, count, C)));
    CHECK(bitwise_equal(host_copy(d_db, size_t(C)), column_sums_in_order(db, pb, count, C)));
    cuda::add_column_partials(ctx, {d_da, d_pb}, count, C);
    CHECK(bitwise_equal(host_copy(d_da, size_t(C)),
                        column_sums_in_order(column_sums_in_order(da, pa, count, C), pb, count, C)));
    for (float* p : {d_pa, d_pb, d_da, d_db}) CHECK(cudaFree(p) == cudaSuccess);
  }
}

}  // namespace
}  // namespace trainer::testing
