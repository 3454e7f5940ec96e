// Matrix products through cuBLASLt: out (M,N) = op(a) x op(b) [+ bias] [+ out or residual], with the
// bias (and, in bf16, GELU) epilogues fused where cuBLASLt offers them; the backward form
// (GELU gradient and bias gradient of the product) in bf16 through DGELU_BGRAD, and a weight
// gradient's bias gradient (a's column sums) through BGRADB.
// Invariants: tensors are row-major; cuBLASLt is column-major, so the product is computed
// transposed (out^T = op(b)^T op(a)^T), which needs no data movement. Compute is strict fp32
// (CUBLAS_COMPUTE_32F, no TF32) for f32 inputs and fp32 accumulation for bf16 inputs; weight
// gradients read bf16 and accumulate into f32 (beta = 1). The workspace is allocated once.
// Heuristic results are cached per problem (shapes, types, epilogue, pointer alignments).
#pragma once

#include <cublasLt.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

class Matmul {
 public:
  explicit Matmul(DeviceMemory& memory);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  void run(const Context& ctx, const MatmulOp& op);
  // How many products ran with each cuBLASLt epilogue ("DEFAULT", "BIAS", "GELU_AUX_BIAS",
  // "DGELU_BGRAD", "BGRADB", ...; "+C" where the residual was C): which fusions this GPU and
  // cuBLASLt took, since every refusal falls back silently to the same result.
  const std::map<std::string, int64_t>& epilogue_runs() const { return epilogue_runs_; }

 private:
  using Key = std::array<int64_t, 16>;
  // One cuBLASLt epilogue and what it points at: bias read (BIAS) or bias gradient written
  // (BGRAD), with its dtype; aux the pre-activation, written (GELU_AUX) or read (DGELU).
  struct Epilogue {
    cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
    const void* bias = nullptr;
    DType bias_dtype = DType::f32;
    const void* aux = nullptr;
  };
  // gelu_inp and dbias given: DGELU_BGRAD, DGELU, or the plain product and our kernels.
  void run_backward_form(const Context& ctx, const MatmulOp& op, const MatmulDims& d);
  // dbias_a given: BGRADB, or the plain product and our bias-gradient kernel on a.
  void run_weight_grad_form(const Context& ctx, const MatmulOp& op, const MatmulDims& d);
  // Runs the first of these epilogues (then the plain product) that cuBLASLt takes; its kind.
  cublasLtEpilogue_t run_first(const Context& ctx, const MatmulOp& op, const MatmulDims& d,
                               std::vector<Epilogue> attempts);
  static std::string no_algorithm(const MatmulOp& op, const MatmulDims& d);
  // Runs the product with this epilogue (and the residual as C) if cuBLASLt has an algorithm
  // for it; false if not. In cuBLASLt's column-major terms: D (m = N, n = M) = op(A = b) op(B = a).
  bool try_run(const Context& ctx, const MatmulOp& p, const MatmulDims& d, const Epilogue& e, bool with_residual);

  DeviceMemory& memory_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  struct CachedAlgo {
    bool found = false;
    cublasLtMatmulAlgo_t algo{};
  };
  std::map<Key, CachedAlgo> cache_;
  std::map<std::string, int64_t> epilogue_runs_;
};

}  // namespace trainer::cuda
