// CPU backend basics: identity, make_backend choices, aligned allocation with byte accounting,
// copies, and flush-to-zero / denormals-are-zero on the caller and every OpenMP thread.
#include <doctest/doctest.h>
#include <omp.h>
#include <pmmintrin.h>
#include <xmmintrin.h>

#include <cstdint>
#include <thread>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/base/errors.h"
#include "tests/kernels/kernel_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("cpu backend: identity and make_backend") {
  auto be = make_cpu_backend();
  CHECK(be->device() == Device::cpu);
  CHECK(be->name() == "cpu");
  CHECK(be->act_dtype() == DType::f32);
  BackendOptions opts;
  opts.device = DeviceChoice::cpu;
  CHECK(make_backend(opts)->device() == Device::cpu);
  opts.precision = Precision::bf16;
  CHECK_THROWS_AS(make_backend(opts), ConfigError);
}

TEST_CASE("cpu backend: aligned allocations, accounting, copies") {
  auto be = make_cpu_backend();
  CHECK(be->allocated_bytes() == 0);
  {
    Buffer a = be->alloc(100);
    Buffer big = be->alloc(size_t(5) << 20);
    CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
    CHECK(reinterpret_cast<uintptr_t>(big.data()) % 64 == 0);
    CHECK(be->allocated_bytes() == 100 + (size_t(5) << 20));
    Buffer moved = std::move(a);
    CHECK(a.data() == nullptr);
    CHECK(be->allocated_bytes() == 100 + (size_t(5) << 20));
    std::vector<float> host = {1, 2, 3, 4}, back(4);
    be->copy_from_host(moved.data(), host.data(), 16);
    be->copy(static_cast<char*>(moved.data()) + 16, moved.data(), 16);
    be->copy_to_host(back.data(), static_cast<char*>(moved.data()) + 16, 16);
    CHECK(back == host);
    be->memset_zero(moved.data(), 16);
    be->copy_to_host(back.data(), moved.data(), 16);
    CHECK(back == std::vector<float>(4, 0.0f));
    Tensor t = moved.tensor(DType::f32, {5, 5});
    CHECK(t.numel() == 25);
    CHECK_THROWS_AS(moved.tensor(DType::f32, {26}), std::logic_error);
  }
  CHECK(be->allocated_bytes() == 0);
  CHECK(be->peak_allocated_bytes() == 100 + (size_t(5) << 20));
  int on_stack = 0;
  CHECK_THROWS_AS(be->raw_free(&on_stack), std::logic_error);
  CHECK(be->alloc(0).data() == nullptr);
}

TEST_CASE("cpu backend: construction sets FTZ and DAZ on the caller and all OpenMP threads") {
  // A fresh thread gets its own OpenMP pool. Clear the modes first and start the pool, so the
  // workers exist with denormals enabled before the backend is built.
  int caller_ok = 0, workers = 0, workers_ok = 0;
  std::thread th([&] {
    omp_set_dynamic(0);
    omp_set_num_threads(2);
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_OFF);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_OFF);
#pragma omp parallel
    {
      _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_OFF);
      _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_OFF);
    }
    auto be = make_cpu_backend();
    caller_ok = _MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON &&
                _MM_GET_DENORMALS_ZERO_MODE() == _MM_DENORMALS_ZERO_ON;
#pragma omp parallel reduction(+ : workers, workers_ok)
    {
      workers += 1;
      workers_ok += _MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON &&
                    _MM_GET_DENORMALS_ZERO_MODE() == _MM_DENORMALS_ZERO_ON;
    }
  });
  th.join();
  CHECK(caller_ok == 1);
  CHECK(workers == 2);
  CHECK(workers_ok == workers);
}

TEST_CASE("cpu backend: non-f32 activations and wrong devices are rejected") {
  auto be = make_cpu_backend();
  std::vector<float> x(8), y(8);
  Tensor bf16 = view(x, {8});
  bf16.dtype = DType::bf16;
  CHECK_THROWS_AS(be->gelu_forward(view(y, {8}), bf16), std::logic_error);
  Tensor gpu = view(x, {8});
  gpu.device = Device::cuda;
  CHECK_THROWS_AS(be->scale(gpu, 2.0f), std::logic_error);
  CHECK_THROWS_AS(be->sum_squares(Tensor{}), std::logic_error);
}
