// Our CUDA kernels run on the CPU emulator (cuda_emu.h) against the CPU backend: the parity
// tables of tests/kernels/cuda in both precisions, through the CUDA backend itself
// (make_cuda_backend on the emulated runtime), attention's tensor-core kernels included
// (shadow/kernels/cuda/cuda_ptx.cuh stands in for their PTX); the matrix products' table is
// test_cublaslt_emu.cpp's, under each of the emulated cuBLASLt's refusals. This checks what the
// kernels compute: indexing, tails, vector paths, barriers, warp reductions, launch
// configurations and determinism; never speed, and never instead of a GPU (test_cuda still
// reports skipped without one). The first cases show the emulator fails what it should;
// test_cuda_emu_model.cpp trains whole models on it.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/cuda/parity_tables.h"
#include "tests/kernels/cuda_emu/cuda_emu_counts.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/kernels/cuda_emu/emu_selftest.h"

namespace trainer::testing {
namespace {

TEST_CASE("a block sum is right with its barrier and wrong without it") {
  constexpr int kBlocks = 3, kThreads = 256;
  std::vector<float> in(kBlocks * kThreads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i * i % 97);  // no two warps alike
  std::vector<float> want(kBlocks, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) want[i / kThreads] += in[i];
  CHECK(emu_selftest::block_sums(in, kBlocks, kThreads, true) == want);
  // Without the barrier thread 0 reads the other warps' slots before they are written, in one
  // of the two scheduling orders the emulator alternates between launches.
  const std::vector<float> first = emu_selftest::block_sums(in, kBlocks, kThreads, false);
  const std::vector<float> second = emu_selftest::block_sums(in, kBlocks, kThreads, false);
  CHECK((first != want || second != want));
}

TEST_CASE("a shuffle needs every lane of its mask") {
  const std::vector<int> got = emu_selftest::shuffle(false);
  for (int lane = 0; lane < 32; ++lane) CHECK(got[size_t(lane)] == (lane + 1) % 32 * 10);
  CHECK_THROWS_WITH_AS(emu_selftest::shuffle(true), doctest::Contains("lane 5 of a warp operation's mask has exited"),
                       std::runtime_error);
}

TEST_CASE("shared memory a block has not written is garbage, and cp.async needs aligned addresses") {
  const std::vector<float> slots = emu_selftest::unwritten_shared(3);
  CHECK(slots[0] == 7.0f);
  CHECK(std::isnan(slots[1]));
  CHECK(std::isnan(slots[2]));
  CHECK(emu_selftest::cp_async_16(0) == std::vector<float>{1, 2, 3, 4});
  CHECK(emu_selftest::cp_async_16(4) == std::vector<float>{5, 6, 7, 8});
  CHECK_THROWS_WITH_AS(emu_selftest::cp_async_16(1), doctest::Contains("cp.async source at an address not aligned"),
                       std::runtime_error);
}

TEST_CASE("launches the hardware refuses are launch errors") {
  CHECK(emu_selftest::launch_error(1, 128, 512, 0) == cudaSuccess);
  CHECK(emu_selftest::launch_error(1, 1025, 0, 0) == cudaErrorInvalidConfiguration);
  CHECK(emu_selftest::launch_error(65536, 32, 0, 0) == cudaErrorInvalidConfiguration);
  CHECK(emu_selftest::launch_error(1, 32, 64 * 1024, 0) == cudaErrorInvalidValue);  // above 48 KiB, no opt-in
  CHECK(emu_selftest::launch_error(1, 32, 64 * 1024, 64 * 1024) == cudaSuccess);
  CHECK(emu_selftest::launch_error(1, 32, 0, 228 * 1024) == cudaErrorInvalidValue);  // past sm_90's 227 KiB
}

// Every case also checks that each kernel went to the backend's stream (cuda_emu_cudart.cpp): one
// on the legacy stream would race with it on a GPU, the backend's stream being non-blocking.
void check_emulated_parity(const std::vector<ParityCase>& cases) {
  const int64_t legacy_before = emu::count("launches on the legacy stream");
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    std::unique_ptr<Backend> cpu = make_cpu_backend();
    BackendOptions options;
    options.device = DeviceChoice::cuda;
    options.precision = p;
    options.stochastic_rounding = false;
    std::unique_ptr<Backend> emulated = make_cuda_backend(options);  // on the emulated runtime
    run_parity(*cpu, *emulated, cases);
  }
  CHECK(emu::count("launches on the legacy stream") == legacy_before);
}

#define TRAINER_PARITY_TEST(cases, name) \
  TEST_CASE("parity " name) { check_emulated_parity(cases()); }
TRAINER_PARITY_TABLES(TRAINER_PARITY_TEST)
#undef TRAINER_PARITY_TEST

// Attention in three cases (each a few seconds to a minute here), so ctest runs them side by side.
std::vector<ParityCase> cases_of(const std::vector<ParityCase>& cases, const std::string& op) {
  std::vector<ParityCase> out;
  for (const ParityCase& c : cases)
    if (c.label.rfind(op + " ", 0) == 0) out.push_back(c);
  REQUIRE(!out.empty());
  return out;
}
// The tensor-core kernels' ldmatrix reads (bf16, D = 64 and 128) must each take one pass over
// the shared-memory banks: their tiles' rows are padded by 8 elements for that (cuda_mma.cuh).
void check_ldmatrix_conflict_free() {
  INFO(emu::count("ldmatrix bank conflicts") << " bank conflicts in " << emu::count("ldmatrix matrices")
                                             << " ldmatrix 8x8 matrices");
  CHECK(emu::count("ldmatrix matrices") > 0);
  CHECK(emu::count("ldmatrix bank conflicts") == 0);
}
TEST_CASE("parity attention_forward") {
  emu::reset_counts();
  check_emulated_parity(cases_of(attention_parity_cases(), "attention_forward"));
  check_ldmatrix_conflict_free();
}
TEST_CASE("parity attention_backward") {
  emu::reset_counts();
  check_emulated_parity(cases_of(attention_parity_cases(), "attention_backward"));
  check_ldmatrix_conflict_free();
}
TEST_CASE("parity attention_cached") {
  check_emulated_parity(cases_of(attention_parity_cases(), "attention_cached"));
}

}  // namespace
}  // namespace trainer::testing
