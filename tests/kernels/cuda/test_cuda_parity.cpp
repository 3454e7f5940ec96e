// CUDA against the CPU backend through the parity harness (parity.h), one test per op family,
// in both precisions: every op with tensor outputs on the shapes of parity_cases.h.
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/parity_cases.h"
#include "tests/kernels/cuda/parity_llama_cases.h"

namespace trainer::testing {
namespace {

void check_parity(const std::vector<ParityCase>& cases) {
  for (Precision p : all_precisions()) {
    Rig rig = make_rig(p);
    run_parity(*rig.cpu, *rig.gpu, cases);
  }
}

TEST_CASE("parity: matmul") { check_parity(matmul_parity_cases()); }
TEST_CASE("parity: encoder") { check_parity(encoder_parity_cases()); }
TEST_CASE("parity: layernorm") { check_parity(layernorm_parity_cases()); }
TEST_CASE("parity: attention") { check_parity(attention_parity_cases()); }
TEST_CASE("parity: element-wise") { check_parity(elementwise_parity_cases()); }
TEST_CASE("parity: bias_backward") { check_parity(bias_backward_parity_cases()); }
TEST_CASE("parity: cross-entropy") { check_parity(xent_parity_cases()); }
TEST_CASE("parity: adamw") { check_parity(adamw_parity_cases()); }
TEST_CASE("parity: rmsnorm") { check_parity(rmsnorm_parity_cases()); }
TEST_CASE("parity: head rmsnorm") { check_parity(head_rmsnorm_parity_cases()); }
TEST_CASE("parity: rope") { check_parity(rope_parity_cases()); }
TEST_CASE("parity: swiglu") { check_parity(swiglu_parity_cases()); }

}  // namespace
}  // namespace trainer::testing
