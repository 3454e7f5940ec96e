// The parity tables of the CUDA tests (tests/kernels/cuda/parity_tables.h) run CPU against CPU:
// every case passes the front doors, its prepare step works, the reference writes every
// output in full and the harness's comparisons and reruns hold, so a CUDA failure on a GPU
// machine points at the kernel, not at the table. And the harness's checks themselves: a
// backend that leaves an output unwritten, computes a wrong result or is not deterministic
// fails.
#include <doctest/doctest.h>

#include <functional>
#include <utility>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/cuda/parity_tables.h"

namespace trainer::testing {
namespace {

void check_tables(const std::vector<ParityCase>& cases) {
  auto ref = make_cpu_backend();
  auto dev = make_cpu_backend();
  run_parity(*ref, *dev, cases);
}

TEST_CASE("parity tables: matmul, CPU against CPU") { check_tables(matmul_parity_cases()); }
TEST_CASE("parity tables: attention, CPU against CPU") { check_tables(attention_parity_cases()); }
#define TRAINER_PARITY_TEST(cases, name) \
  TEST_CASE("parity tables: " name ", CPU against CPU") { check_tables(cases()); }
TRAINER_PARITY_TABLES(TRAINER_PARITY_TEST)
#undef TRAINER_PARITY_TEST

// The harness's own checks, each made to fire: a case where the backend under test misbehaves.
ParityCase gelu_case(std::function<void(Backend&, const ParityArgs&)> run) {
  ParityCase c;
  c.label = "gelu_forward 64";
  c.args = {output("out", Kind::act, {64}, kTolAct), input("inp", Kind::act, {64}, -4, 4)};
  c.run = std::move(run);
  return c;
}

TEST_CASE("parity harness: an output the backend leaves unwritten fails" * doctest::should_fail()) {
  auto ref = make_cpu_backend();
  auto dev = make_cpu_backend();
  Backend* under_test = dev.get();
  run_parity_case(*ref, *dev, gelu_case([under_test](Backend& be, const ParityArgs& t) {
    be.run(GeluForwardOp{&be == under_test ? t["out"].flat(0, 32) : t["out"], &be == under_test ? t["inp"].flat(0, 32) : t["inp"]});
  }));
}

TEST_CASE("parity harness: a wrong result fails" * doctest::should_fail()) {
  auto ref = make_cpu_backend();
  auto dev = make_cpu_backend();
  Backend* under_test = dev.get();
  run_parity_case(*ref, *dev, gelu_case([under_test](Backend& be, const ParityArgs& t) {
    be.run(GeluForwardOp{t["out"], t["inp"]});
    if (&be == under_test) be.run(ScaleOp{t["out"], 1.001f});
  }));
}

TEST_CASE("parity harness: a result that changes from run to run fails" * doctest::should_fail()) {
  auto ref = make_cpu_backend();
  auto dev = make_cpu_backend();
  Backend* under_test = dev.get();
  int runs = 0;
  run_parity_case(*ref, *dev, gelu_case([under_test, &runs](Backend& be, const ParityArgs& t) {
    be.run(GeluForwardOp{t["out"], t["inp"]});
    if (&be == under_test && runs++ > 0) be.run(ScaleOp{t["out"], 1.0f + 1e-7f});
  }));
}

}  // namespace
}  // namespace trainer::testing
