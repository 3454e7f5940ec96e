// Helpers for the CPU kernel tests: host vectors viewed as tensors (the CPU backend works on
// host memory directly), float/double conversion, element-wise comparison with a report of
// the worst element, central finite differences, and the odd shapes several ops' tests share.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/tensor.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

// A row-wise op's (N, C): widths off the fast kernels' vector chunks, one row, many rows.
struct Rows {
  int64_t N, C;
};
inline constexpr Rows kRowShapes[] = {{1, 1}, {1, 13}, {37, 200}, {5, 768}, {33, 1000}, {70, 33}};

// The qkv tensor (B, T, (H + 2*Hkv)*D) of a per-head op (head RMSNorm, rope): ordinary, grouped
// and multi-query k/v heads.
struct Heads {
  int64_t B, T, H, Hkv, D;
  int64_t width() const { return (H + 2 * Hkv) * D; }
  int64_t rows() const { return B * T; }
  std::string name() const {
    return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " H=" + std::to_string(H) +
           " Hkv=" + std::to_string(Hkv) + " D=" + std::to_string(D);
  }
};
inline const Heads kHeadShapes[] = {{2, 3, 2, 2, 4}, {1, 5, 4, 2, 8}, {2, 7, 6, 1, 6}, {1, 33, 4, 1, 64}, {3, 2, 3, 3, 2}};

inline Tensor view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return make_tensor(v.data(), DType::f32, Device::cpu, shape);
}

inline Tensor view(std::vector<int32_t>& v, std::initializer_list<int64_t> shape) {
  return make_tensor(v.data(), DType::i32, Device::cpu, shape);
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

inline std::vector<int32_t> random_ints(size_t n, int32_t lo, int32_t hi, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Checks |got - want| <= atol + rtol * |want| element-wise; on failure names the worst element.
template <class A, class B>
void check_close(const std::vector<A>& got, const std::vector<B>& want, double rtol, double atol,
                 const std::string& what) {
  REQUIRE_MESSAGE(got.size() == want.size(), what << ": sizes differ");
  size_t worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]), w = double(want[i]);
    const double excess = std::fabs(g - w) - (atol + rtol * std::fabs(w));
    if (is_worse(excess, worst_excess)) {
      worst_excess = excess;
      worst = i;
    }
  }
  INFO(what << ": worst element " << worst << " got " << double(got[worst]) << " want "
            << double(want[worst]));
  CHECK((got.empty() || worst_excess <= 0));
}

// Bitwise equality of two float vectors (the determinism tests).
// Packed documents for B rows of T tokens, as model/documents.h lays them out: each row
// splits at random (documents of 1 to max_len tokens, the first one at 0); doc_start holds
// each token's document start, positions its position within the document.
struct RandomDocuments {
  std::vector<int32_t> doc_start, positions;
};
inline RandomDocuments random_documents(int64_t B, int64_t T, int64_t max_len, uint64_t seed) {
  RandomDocuments d;
  d.doc_start.resize(size_t(B * T));
  d.positions.resize(size_t(B * T));
  for (int64_t b = 0; b < B; ++b) {
    int64_t start = 0, next = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (t == next) {
        start = t;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        next = t + 1 + int64_t((seed >> 33) % uint64_t(max_len));
      }
      d.doc_start[size_t(b * T + t)] = int32_t(start);
      d.positions[size_t(b * T + t)] = int32_t(t - start);
    }
  }
  return d;
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  return std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
    uint32_t bx, by;
    std::memcpy(&bx, &x, 4);
    std::memcpy(&by, &y, 4);
    return bx == by;
  });
}

// d loss / d x[i] by central differences in double, restoring x[i].
inline double central_difference(std::vector<double>& x, size_t i,
                                 const std::function<double()>& loss, double h = 1e-6) {
  const double old = x[i];
  x[i] = old + h;
  const double plus = loss();
  x[i] = old - h;
  const double minus = loss();
  x[i] = old;
  return (plus - minus) / (2 * h);
}

// Finite-difference gradient of loss with respect to every element of x.
inline std::vector<double> numeric_gradient(std::vector<double>& x,
                                            const std::function<double()>& loss) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) g[i] = central_difference(x, i, loss);
  return g;
}

// sum_i w[i] * y[i]: the scalar loss whose gradient with respect to y is w.
inline double dot(const std::vector<double>& w, const std::vector<double>& y) {
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += w[i] * y[i];
  return s;
}

}  // namespace trainer::testing
