// add_column_partials (cuda_reduce.cu), the second pass of the norms' weight gradients, holds
// to its documented order bit for bit: thread row y of 32 sums partials y, y + 32, ... in that
// order, then the 32 sums are added in row order to dst. The norms' determinism across GPUs,
// and across changes to how the kernel loads its partials, rests on that order.
#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_ops.h"
#include "tests/kernels/cuda/cuda_test_util.h"

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

TEST_CASE("add_column_partials sums in its documented order, bit for bit, one sum or two in a launch") {
  Rig rig = make_rig(Precision::fp32);
  const cuda::Context ctx{cuda_backend_stream(*rig.gpu)};  // ordered with the uploads and reads
  const int64_t C = 40;  // a full and a partial block of 32 columns
  // 1 (a fused epilogue's bias gradient), under one thread row each, past one round of 16
  // loads per thread row (512), and gpt2-124m's 1366.
  for (int64_t count : {1, 31, 600, 1366}) {
    CAPTURE(count);
    const auto pa = random_floats(size_t(count * C), 510 + uint64_t(count), -1, 1);
    const auto pb = random_floats(size_t(count * C), 520 + uint64_t(count), -1, 1);
    const auto da = random_floats(size_t(C), 530), db = random_floats(size_t(C), 531);
    Tensors gpu(*rig.gpu);
    Tensor g_pa = gpu.upload(pa, DType::f32, {count, C}), g_pb = gpu.upload(pb, DType::f32, {count, C});
    Tensor g_da = gpu.upload(da, DType::f32, {C}), g_db = gpu.upload(db, DType::f32, {C});
    cuda::add_column_partials(ctx, {g_da.ptr<float>(), g_pa.ptr<float>()}, {g_db.ptr<float>(), g_pb.ptr<float>()},
                              count, C);
    check_equal(gpu.read(g_da), column_sums_in_order(da, pa, count, C), "two sums, the first");
    check_equal(gpu.read(g_db), column_sums_in_order(db, pb, count, C), "two sums, the second");
    cuda::add_column_partials(ctx, {g_da.ptr<float>(), g_pb.ptr<float>()}, count, C);
    check_equal(gpu.read(g_da), column_sums_in_order(column_sums_in_order(da, pa, count, C), pb, count, C),
                "one sum");
  }
}

}  // namespace
}  // namespace trainer::testing
