// The emulated cuBLASLt's control (cublaslt_emu.cpp): what it refuses beyond the limits that
// cublasLt.h documents, so that tests reach each fallback of kernels/cuda/cuda_matmul.cpp.
// Per OS thread; each setting stays until set again.
#pragma once

namespace emu::cublaslt {

enum class Refusal {
  none,                    // only the documented limits
  epilogues_in_heuristic,  // no algorithm for any epilogue but DEFAULT
  epilogues_in_matmul,     // an algorithm, then cublasLtMatmul returns NOT_SUPPORTED for any epilogue
  separate_c_in_matmul,    // cublasLtMatmul returns NOT_SUPPORTED where C is not D (beta != 0)
  everything,              // no algorithm for anything
};
void set_refusal(Refusal refusal);

// The bias and bias-gradient types beside D that cublasLtMatmul takes: D's own, as cublasLt.h
// documents for CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE (another is INVALID_VALUE from the call,
// not from the heuristic), or also f32 beside bf16 D, as a cuBLASLt version may.
enum class BiasTypes { as_documented, f32_beside_bf16 };
void set_bias_types(BiasTypes types);

}  // namespace emu::cublaslt
