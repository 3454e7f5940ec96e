// The CPU's multi-tensor ops: adamw_many gives, bit for bit, what adamw gives piece by piece
// (each piece with its own weight decay, seed and offset, empty pieces among them), and
// sum_squares_many the ordered sum of sum_squares over the pieces; zero pieces do nothing.
#include <doctest/doctest.h>

#include <cstring>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/multi_tensor_cases.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("cpu adamw_many: each piece's adamw, bit for bit") {
  auto be = make_cpu_backend();
  const std::vector<int64_t> sizes = multi_tensor_sizes(50);
  const int64_t n = total_of(sizes);
  AdamWStep h;
  h.lr = 1e-2f;
  h.weight_decay = 0.1f;
  h.grad_scale = 0.5f;
  h.step = 3;
  const auto g = random_floats(size_t(n), 7);
  std::vector<float> p1 = random_floats(size_t(n), 8), m1 = random_floats(size_t(n), 9, -0.1f, 0.1f),
                     v1 = random_floats(size_t(n), 10, 0.0f, 0.01f), c1(size_t(n), -1.0f);
  auto p2 = p1, m2 = m1, v2 = v1, c2 = c1;
  auto g1 = g;
  be->adamw_many(adamw_many_pieces(view(p1, {n}), view(g1, {n}), view(m1, {n}), view(v1, {n}), view(c1, {n}), sizes, h));
  for (const AdamWOp& op :
       adamw_many_pieces(view(p2, {n}), view(g1, {n}), view(m2, {n}), view(v2, {n}), view(c2, {n}), sizes, h))
    be->run(op);
  CHECK(same_bits(p1, p2));
  CHECK(same_bits(m1, m2));
  CHECK(same_bits(v1, v2));
  CHECK(same_bits(c1, c2));
  CHECK(!same_bits(p1, random_floats(size_t(n), 8)));  // it did update
  // Zero pieces: nothing changes.
  const auto before = p1;
  be->adamw_many({});
  CHECK(same_bits(p1, before));
}

TEST_CASE("cpu sum_squares_many: the ordered sum of each piece's sum_squares") {
  auto be = make_cpu_backend();
  const std::vector<int64_t> sizes = multi_tensor_sizes(130);
  const int64_t n = total_of(sizes);
  auto x = random_floats(size_t(n), 11, -3.0f, 3.0f);
  const std::vector<Tensor> xs = cut(view(x, {n}), sizes);
  double want = 0;
  for (const Tensor& t : xs) want += be->sum_squares(t);
  const double got = be->sum_squares_many(xs);
  CHECK(std::memcmp(&got, &want, sizeof got) == 0);
  CHECK(got > 0);
  CHECK(be->sum_squares_many({}) == 0.0);
}
