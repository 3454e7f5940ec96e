// init_normal on the GPU against the host draw, bit for bit, over 2^24 elements (4M Philox
// blocks: two thirds of the 2^23 uniforms in each of the radius and angle roles) far into a
// stream, with a zeroed tail; the parity rows (parity_cases.h) cover small and unaligned sizes.
#include <cstring>

#include "kernels/init_normal.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("init_normal: the GPU draws the host's bits over 2^24 elements") {
  Rig rig = make_rig(Precision::fp32);
  constexpr int64_t n = int64_t(1) << 24;
  NormalFill f;
  f.key = 0x243F6A8885A308D3ull;
  f.stream = 1;
  f.first = (int64_t(1) << 33) + 3;
  f.std = 0.02;
  f.zero_from = f.first + n - 1000;
  Buffer out = rig.gpu->alloc(size_t(n) * 4);
  rig.gpu->init_normal(out.tensor(DType::f32, {n}), f);
  std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
  rig.gpu->copy_to_host(got.data(), out.data(), size_t(n) * 4);
  init_normal_host(want.data(), n, f);
  int64_t differ = 0, first_bad = -1;
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(&got[size_t(i)], &want[size_t(i)], 4) != 0) {
      if (first_bad < 0) first_bad = i;
      ++differ;
    }
  CAPTURE(first_bad);
  CHECK(differ == 0);
}

}  // namespace
}  // namespace trainer::testing
