// MetaBackend (kernels/meta_backend.h): bytes are counted as a real backend counts them, the
// addresses are distinct and never touched, copies to the host give zeros, and every op still
// goes through its front door, so a contract violation fails in a dry run as in a real one.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "kernels/meta_backend.h"

namespace trainer {
namespace {

TEST_CASE("MetaBackend counts allocations and frees exactly") {
  MetaBackend meta(Device::cuda, DType::bf16);
  CHECK(meta.device() == Device::cuda);
  CHECK(meta.act_dtype() == DType::bf16);
  {
    Buffer a = meta.alloc(1000), b = meta.alloc(24), empty = meta.alloc(0);
    CHECK(a.data() != b.data());
    CHECK(empty.data() == nullptr);
    CHECK(meta.allocated_bytes() == 1024);
    // Address ranges do not overlap: the front doors' aliasing checks stay meaningful.
    const auto lo = reinterpret_cast<uintptr_t>(a.data()), hi = reinterpret_cast<uintptr_t>(b.data());
    CHECK((hi >= lo + 1000 || lo >= hi + 24));
    Buffer c = meta.alloc(4096);
    CHECK(meta.peak_allocated_bytes() == 1024 + 4096);
  }
  CHECK(meta.allocated_bytes() == 0);
  CHECK(meta.peak_allocated_bytes() == 1024 + 4096);
  int not_mine = 0;
  CHECK_THROWS_AS(meta.raw_free(&not_mine), std::logic_error);
}

TEST_CASE("MetaBackend computes nothing but checks every op's contract") {
  MetaBackend meta(Device::cpu, DType::f32);
  Buffer buf = meta.alloc(3 * 4 * 5 * 4);
  Tensor a = buf.tensor(DType::f32, {3, 4}), x = buf.tensor(DType::f32, {60});
  Buffer out_buf = meta.alloc(3 * 5 * 4), b_buf = meta.alloc(4 * 5 * 4);
  Tensor out = out_buf.tensor(DType::f32, {3, 5}), b = b_buf.tensor(DType::f32, {4, 5});
  meta.matmul(out, a, b, Transpose::none, Transpose::none, Tensor{}, Accumulate::overwrite, Tensor{});
  CHECK(meta.sum_squares(x) == 0.0);
  // (3, 4) x (3, 5): K does not match.
  CHECK_THROWS_AS(meta.matmul(out, a, buf.tensor(DType::f32, {3, 5}), Transpose::none, Transpose::none, Tensor{},
                              Accumulate::overwrite, Tensor{}),
                  std::logic_error);
  std::vector<float> host(4, 7.0f);
  meta.copy_to_host(host.data(), x.data, 16);
  CHECK(host == std::vector<float>(4, 0.0f));
  meta.copy_from_host(x.data, host.data(), 16);
  meta.memset_zero(x.data, 16);
  meta.synchronize();
}

}  // namespace
}  // namespace trainer
