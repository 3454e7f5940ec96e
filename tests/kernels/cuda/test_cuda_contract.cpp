// The front doors on the CUDA backend, in both precisions: the contract table of
// tests/kernels/contract_cases.h (the one the CPU backend passes) — every valid call runs, every
// broken one is rejected with a message naming the op and the argument.
#include "tests/kernels/contract_cases.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace trainer::testing {
namespace {

TEST_CASE("backend contract: the CUDA front doors accept valid calls and name what a broken one breaks") {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    check_contract(*rig.gpu);
  }
}

}  // namespace
}  // namespace trainer::testing
