// The emulated cuBLASLt's control (cublaslt_emu.cpp): what it refuses beyond the limits that
// cublasLt.h documents, so that tests reach each fallback of kernels/cuda/cuda_matmul.cpp.
// Per OS thread; the refusal stays until set again.
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

}  // namespace emu::cublaslt
