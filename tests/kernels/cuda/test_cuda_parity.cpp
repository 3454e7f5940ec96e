// CUDA against the CPU backend through the parity harness (parity.h), one test per op family,
// in both precisions: every op with tensor outputs on the shapes of its table (parity_tables.h).
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/parity_tables.h"

namespace trainer::testing {
namespace {

void check_parity(const std::vector<ParityCase>& cases) {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    run_parity(*rig.cpu, *rig.gpu, cases);
  }
}

TEST_CASE("parity: matmul") { check_parity(matmul_parity_cases()); }
TEST_CASE("parity: attention") { check_parity(attention_parity_cases()); }
#define TRAINER_PARITY_TEST(cases, name) \
  TEST_CASE("parity: " name) { check_parity(cases()); }
TRAINER_PARITY_TABLES(TRAINER_PARITY_TEST)
#undef TRAINER_PARITY_TEST

}  // namespace
}  // namespace trainer::testing
