// kernels/cuda/cuda_matmul.cpp on the emulated cuBLASLt (cublaslt_emu.cpp): first the emulator
// against products worked by hand from cublasLt.h's column-major rules (so that it cannot share
// a misreading with cuda_matmul.cpp and still pass), then the matmul parity table against the
// CPU backend under every refusal the emulator can make, each of which must fall back to the
// same results, with the backend's epilogue counts showing which path ran.
#include <cublasLt.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <utility>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/kernels/cuda/parity_cases.h"
#include "tests/kernels/cuda_emu/cublaslt_emu.h"
#include "tests/kernels/cuda_emu/cuda_emu_counts.h"

namespace trainer::testing {
namespace {

using emu::cublaslt::BiasTypes;
using emu::cublaslt::Refusal;

// One product through the API as a caller uses it: the heuristic's algorithm, then the call.
struct LtCall {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtCall(cudaDataType_t type, uint64_t a_rows, uint64_t a_cols, uint64_t b_rows, uint64_t b_cols, uint64_t m,
         uint64_t n) {
    REQUIRE(cublasLtCreate(&handle) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatrixLayoutCreate(&a, type, a_rows, a_cols, int64_t(a_rows)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatrixLayoutCreate(&b, type, b_rows, b_cols, int64_t(b_rows)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatrixLayoutCreate(&d, type, m, n, int64_t(m)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  }
  ~LtCall() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(d);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(handle);
  }
  template <class V>
  cublasStatus_t set(cublasLtMatmulDescAttributes_t attr, const V& value) {
    return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value);
  }
  cublasStatus_t heuristic(cublasLtMatmulHeuristicResult_t& result) {
    int returned = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, d, d, pref, 1, &result, &returned);
    return s == CUBLAS_STATUS_SUCCESS && returned != 1 ? CUBLAS_STATUS_NOT_SUPPORTED : s;
  }
  cublasStatus_t run(const void* A, const void* B, void* D) {
    cublasLtMatmulHeuristicResult_t result{};
    const cublasStatus_t s = heuristic(result);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle, desc, &alpha, A, a, B, b, &beta, D, d, D, d, &result.algo, nullptr, 0, nullptr);
  }
};

TEST_CASE("cuBLASLt emulator: column-major layouts, transposes and epilogues as cublasLt.h documents them") {
  // A (2 x 3) column-major: [[1, 3, 5], [2, 4, 6]]; B (3 x 2): [[1, 0], [0, 1], [2, 1]].
  alignas(256) const float A[6] = {1, 2, 3, 4, 5, 6};
  alignas(256) const float B[6] = {1, 0, 2, 0, 1, 1};
  alignas(256) float D[4] = {};
  {
    LtCall call(CUDA_R_32F, 2, 3, 3, 2, 2, 2);
    REQUIRE(call.run(A, B, D) == CUBLAS_STATUS_SUCCESS);
    // A B = [[11, 8], [14, 10]], stored by columns.
    CHECK(std::vector<float>(D, D + 4) == std::vector<float>{11, 14, 8, 10});
  }
  {
    // TRANSA and TRANSB: the same memory as A' (3 x 2) = [[1, 4], [2, 5], [3, 6]], so
    // op(A) = A'^T = [[1, 2, 3], [4, 5, 6]], and B' (2 x 3) = [[1, 2, 1], [0, 0, 1]], so
    // op(B) = B'^T = [[1, 0], [2, 0], [1, 1]].
    LtCall call(CUDA_R_32F, 3, 2, 2, 3, 2, 2);
    REQUIRE(call.set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(call.set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_T) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(call.run(A, B, D) == CUBLAS_STATUS_SUCCESS);
    // op(A) op(B) = [[8, 3], [20, 6]].
    CHECK(std::vector<float>(D, D + 4) == std::vector<float>{8, 20, 3, 6});
  }
  {
    // BIAS adds one value per row of D; BGRADB writes op(B)'s sums over k, one per column.
    alignas(16) const float bias[2] = {100, 200};
    LtCall call(CUDA_R_32F, 2, 3, 3, 2, 2, 2);
    REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(call.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(call.run(A, B, D) == CUBLAS_STATUS_SUCCESS);
    CHECK(std::vector<float>(D, D + 4) == std::vector<float>{111, 214, 108, 210});
    alignas(16) float grad[2] = {};
    REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BGRADB) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(call.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(grad)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(call.run(A, B, D) == CUBLAS_STATUS_SUCCESS);
    CHECK(std::vector<float>(grad, grad + 2) == std::vector<float>{3, 2});
  }
}

TEST_CASE("cuBLASLt emulator: attribute sizes, the aux leading dimension and epilogue pointer alignment") {
  alignas(256) const float A[64] = {}, B[64] = {};
  alignas(256) float D[64] = {}, aux[64] = {};
  alignas(16) float bias[10] = {};
  LtCall call(CUDA_R_32F, 8, 8, 8, 8, 8, 8);
  const int64_t wrong_size = CUBLAS_OP_T;  // TRANSA is an int32_t
  CHECK(call.set(CUBLASLT_MATMUL_DESC_TRANSA, wrong_size) == CUBLAS_STATUS_INVALID_VALUE);
  REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<const void*>(aux)) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result{};
  CHECK(call.heuristic(result) == CUBLAS_STATUS_INVALID_VALUE);  // no AUX_LD
  REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t(12)) == CUBLAS_STATUS_SUCCESS);
  CHECK(call.heuristic(result) == CUBLAS_STATUS_INVALID_VALUE);  // not a multiple of 8
  REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t(8)) == CUBLAS_STATUS_SUCCESS);
  CHECK(call.run(A, B, D) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(call.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias + 1)) == CUBLAS_STATUS_SUCCESS);
  CHECK_THROWS_WITH_AS(call.run(A, B, D), doctest::Contains("misaligned address: the epilogue's bias"),
                       std::runtime_error);
  // A and D assumed 256-byte aligned (the preference's default), given 4-byte aligned ones.
  REQUIRE(call.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  CHECK_THROWS_WITH_AS(call.run(A + 1, B, D), doctest::Contains("misaligned address: A"), std::runtime_error);
}

const char* refusal_name(Refusal r) {
  switch (r) {
    case Refusal::none: return "none";
    case Refusal::epilogues_in_heuristic: return "epilogues_in_heuristic";
    case Refusal::epilogues_in_matmul: return "epilogues_in_matmul";
    case Refusal::separate_c_in_matmul: return "separate_c_in_matmul";
    case Refusal::everything: return "everything";
  }
  return "?";
}

struct RefusalGuard {
  explicit RefusalGuard(Refusal r, BiasTypes b = BiasTypes::as_documented) {
    emu::cublaslt::set_refusal(r);
    emu::cublaslt::set_bias_types(b);
  }
  ~RefusalGuard() {
    emu::cublaslt::set_refusal(Refusal::none);
    emu::cublaslt::set_bias_types(BiasTypes::as_documented);
  }
};

std::unique_ptr<Backend> cuda_backend(Precision p) {
  BackendOptions o;
  o.device = DeviceChoice::cuda;
  o.precision = p;
  return make_cuda_backend(o);
}

TEST_CASE("matmul: the parity table on the emulated cuBLASLt, under every refusal it can make") {
  const int64_t legacy_before = emu::count("launches on the legacy stream");
  const std::pair<Refusal, BiasTypes> modes[] = {
      {Refusal::none, BiasTypes::as_documented},          {Refusal::none, BiasTypes::f32_beside_bf16},
      {Refusal::epilogues_in_heuristic, BiasTypes::as_documented}, {Refusal::epilogues_in_matmul, BiasTypes::as_documented},
      {Refusal::separate_c_in_matmul, BiasTypes::as_documented}};
  for (const auto& [refusal, bias_types] : modes) {
    for (Precision p : {Precision::fp32, Precision::bf16}) {
      const bool f32_bias_grad = bias_types == BiasTypes::f32_beside_bf16;
      const std::string label = std::string(refusal_name(refusal)) + (f32_bias_grad ? " (f32 bias beside bf16 D)" : "") +
                                ", " + precision_name(p);
      CAPTURE(label);
      RefusalGuard guard(refusal, bias_types);
      std::unique_ptr<Backend> cpu = make_cpu_backend(), gpu = cuda_backend(p);
      run_parity(*cpu, *gpu, matmul_parity_cases());
      const std::map<std::string, int64_t> ran = cuda_backend_matmul_epilogues(*gpu);
      std::string listed;
      for (const auto& [name, count] : ran) listed += " " + name + "=" + std::to_string(count);
      MESSAGE(label << ":" << listed);
      const auto count = [&](const char* name) { return ran.count(name) ? ran.at(name) : 0; };
      CHECK(count("DEFAULT") > 0);
      const bool epilogues = refusal != Refusal::epilogues_in_heuristic && refusal != Refusal::epilogues_in_matmul;
      for (const auto& [name, n] : ran) {
        CAPTURE(name);
        if (!epilogues) CHECK((name == "DEFAULT" || name == "DEFAULT+C"));
        if (refusal == Refusal::separate_c_in_matmul) CHECK(name.find("+C") == std::string::npos);
      }
      // Which fusions the documented limits leave: the bias epilogue in both precisions (the
      // table's aligned rows), the bf16-only GELU and gradient forms, and C for the residual.
      if (epilogues) {
        CHECK(count("BIAS") + count("BIAS+C") > 0);
        CHECK((p == Precision::bf16) == (count("GELU_AUX_BIAS") > 0));
        CHECK((p == Precision::bf16) == (count("BGRADB") > 0));
        CHECK((p == Precision::bf16) == (count("DGELU") > 0));
        // The MLP's dX asks for an f32 bias gradient beside bf16 D: DGELU_BGRAD where cuBLASLt
        // takes that, else it is refused by the call and DGELU runs, our kernel summing the bias.
        CHECK((p == Precision::bf16 && f32_bias_grad) == (count("DGELU_BGRAD") > 0));
      }
      if (refusal != Refusal::separate_c_in_matmul) CHECK(count("BIAS+C") + count("DEFAULT+C") > 0);
    }
  }
  // The fallbacks' kernels went to the backend's stream, never the legacy one.
  CHECK(emu::count("launches on the legacy stream") == legacy_before);
}

TEST_CASE("matmul: no algorithm at all is an error that names the product") {
  RefusalGuard guard(Refusal::everything);
  std::unique_ptr<Backend> gpu = cuda_backend(Precision::bf16);
  Buffer a(gpu.get(), 64 * 2), b(gpu.get(), 64 * 2), out(gpu.get(), 64 * 2);
  CHECK_THROWS_WITH(gpu->matmul(out.tensor(DType::bf16, {8, 8}), a.tensor(DType::bf16, {8, 8}),
                                b.tensor(DType::bf16, {8, 8}), Transpose::none, Transpose::none, Tensor{},
                                Accumulate::overwrite, Tensor{}),
                    doctest::Contains("cuBLASLt has no algorithm for M=8 N=8 K=8 bf16 -> bf16"));
}

}  // namespace
}  // namespace trainer::testing
