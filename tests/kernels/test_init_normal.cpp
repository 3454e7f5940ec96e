// The normal draw (kernels/base/box_muller.h through kernels/init_normal.h): our own log and
// sincos against a double-precision Box-Muller of the same Philox words and uniforms, the
// draw's moments, and init_normal on the CPU backend equal to the host draw for any range
// and thread count. (tests/kernels/cuda/ holds the device side: the same bits on a GPU.)
#include <doctest/doctest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/backend.h"
#include "kernels/backend_options.h"
#include "kernels/base/philox.h"
#include "kernels/init_normal.h"

using namespace trainer;

namespace {

// g++ -O3 -march=x86-64-v3, g++ -O0 for baseline x86-64 and clang++ agree on it; with
// -ffp-contract=fast g++ gives 0xc620d956404a5f6f.
constexpr uint64_t kPinnedHash = 0x6ec3ec0f5020d5feull;

double uniform_of(uint32_t word) { return (double(word >> 9) + 0.5) / 8388608.0; }

// The four normals of a block in double from the same uniforms.
void reference4(uint64_t key, uint64_t stream, uint64_t block, double out[4]) {
  const PhiloxBlock r = philox4x32_block(key, stream, block);
  for (int pair = 0; pair < 2; ++pair) {
    const double radius = std::sqrt(-2.0 * std::log(uniform_of(r.word[2 * pair])));
    const double angle = 2.0 * M_PI * uniform_of(r.word[2 * pair + 1]);
    out[2 * pair] = radius * std::cos(angle);
    out[2 * pair + 1] = radius * std::sin(angle);
  }
}

}  // namespace

// Every one of the 2^23 uniforms, once as a radius and once as an angle: the float log and
// sincos against double. Errors are measured relative to the pair's radius, which bounds both
// components (an angle error moves a component by radius x the error).
TEST_CASE("init_normal: over every uniform, our float Box-Muller is within a few ulps of a double one") {
  constexpr uint32_t kUniforms = 1u << 23;
  const uint32_t fixed_angle = 0x12345u << 9;  // any angle: checks the radius
  const double cos_fixed = std::cos(2.0 * M_PI * uniform_of(fixed_angle));
  const uint32_t unit_radius = 0x4da2ceu << 9;  // u = 0.6065 = exp(-1/2): radius ~1
  const double radius_unit = std::sqrt(-2.0 * std::log(uniform_of(unit_radius)));
  double worst_radius = 0, worst_angle = 0;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over every output's bits
  auto mix = [&](float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    for (int i = 0; i < 4; ++i) hash = (hash ^ ((b >> (8 * i)) & 0xffu)) * 1099511628211ull;
  };
  for (uint32_t k = 0; k < kUniforms; ++k) {
    const uint32_t word = k << 9;
    const double radius = std::sqrt(-2.0 * std::log(uniform_of(word)));
    const std::array<float, 2> r = normal_pair_host(word, fixed_angle);
    mix(r[0]);
    mix(r[1]);
    worst_radius = std::max(worst_radius, std::abs(double(r[0]) - radius * cos_fixed) / std::max(radius, 1e-3));
    const double angle = 2.0 * M_PI * uniform_of(word);
    const std::array<float, 2> a = normal_pair_host(unit_radius, word);
    mix(a[0]);
    mix(a[1]);
    worst_angle = std::max(worst_angle, std::max(std::abs(double(a[0]) - radius_unit * std::cos(angle)),
                                                 std::abs(double(a[1]) - radius_unit * std::sin(angle))) /
                                            radius_unit);
  }
  MESSAGE("worst relative error: radius ", worst_radius, ", angle ", worst_angle, "; bits hash ", hash);
  // The bits themselves, pinned: they are what the CUDA kernel must give (IEEE operations in a
  // fixed order have one answer), so a host build that fuses, reorders or calls a library
  // function fails here even where no GPU can compare. Any other change of the transform is a
  // deliberate change of every model's first weights and updates this value.
  CHECK(hash == kPinnedHash);
  // 2^-21 is four float ulps at 1.
  CHECK(worst_radius < 0x1p-21);
  CHECK(worst_angle < 0x1p-21);
  // The extremes: the smallest uniform gives the largest radius, finite; the largest a tiny one.
  const std::array<float, 2> far = normal_pair_host(0, 0), near = normal_pair_host(0xffffffffu, 0);
  CHECK(std::isfinite(far[0]));
  CHECK(far[0] == doctest::Approx(std::sqrt(-2.0 * std::log(0.5 / 8388608.0))).epsilon(1e-6));
  CHECK(std::abs(near[0]) < 1e-3);
  CHECK(near[0] > 0);
}

TEST_CASE("init_normal: blocks are the word pairs (0, 1) and (2, 3), and the draw has a normal's moments") {
  constexpr uint64_t kBlocks = 1 << 19;
  double sum = 0, sq = 0, fourth = 0, worst = 0;
  for (uint64_t b = 0; b < kBlocks; ++b) {
    const std::array<float, 4> got = normal4_host(0x9E3779B97F4A7C15ull, 1, b);
    double want[4];
    reference4(0x9E3779B97F4A7C15ull, 1, b, want);
    for (int i = 0; i < 4; ++i) {
      const double z = got[size_t(i)];
      worst = std::max(worst, std::abs(z - want[i]) / std::max(1.0, std::abs(want[i])));
      sum += z;
      sq += z * z;
      fourth += z * z * z * z;
    }
  }
  CHECK(worst < 0x1p-21);
  const double n = 4.0 * double(kBlocks);
  CHECK(std::abs(sum / n) < 5.0 / std::sqrt(n));
  CHECK(std::abs(sq / n - 1.0) < 5.0 * std::sqrt(2.0 / n));
  CHECK(std::abs(fourth / n - 3.0) < 5.0 * std::sqrt(96.0 / n));
}

TEST_CASE("init_normal: the CPU backend's op is the host draw for any range, offset and thread count") {
  BackendOptions options;
  options.device = DeviceChoice::cpu;
  std::unique_ptr<Backend> be = make_backend(options);
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (int64_t first : {int64_t(0), int64_t(3), int64_t(1) << 40}) {
      for (int64_t n : {1, 6, 1001}) {
        CAPTURE(threads);
        CAPTURE(first);
        CAPTURE(n);
        NormalFill f;
        f.key = 77;
        f.stream = 1;
        f.first = first;
        f.std = 0.02;
        f.zero_from = first + n / 2;
        Buffer out = be->alloc(size_t(n) * 4);
        be->init_normal(out.tensor(DType::f32, {n}), f);
        std::vector<float> got(static_cast<size_t>(n));
        be->copy_to_host(got.data(), out.data(), size_t(n) * 4);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t e = first + i;
          const float want = e >= f.zero_from ? 0.0f : float(0.02 * double(normal4_host(77, 1, uint64_t(e) >> 2)[size_t(e & 3)]));
          REQUIRE(std::memcmp(&got[size_t(i)], &want, 4) == 0);
        }
      }
    }
  }
  omp_set_num_threads(saved);
}
