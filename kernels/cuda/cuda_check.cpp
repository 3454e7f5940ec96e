// Error messages for the status-check macros of cuda_check.h.
#include "kernels/cuda/cuda_check.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace trainer::cuda {

void fail_cuda(cudaError_t status, const char* call, const char* file, int line) {
  std::ostringstream s;
  s << "CUDA error at " << file << ":" << line << ": " << call << " returned "
    << cudaGetErrorName(status) << " (" << cudaGetErrorString(status) << ")";
  throw std::runtime_error(s.str());
}

void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  std::ostringstream s;
  s << "cuBLAS error at " << file << ":" << line << ": " << call << " returned "
    << cublasLtGetStatusName(status) << " (" << cublasLtGetStatusString(status) << ")";
  throw std::runtime_error(s.str());
}

void report_cuda(cudaError_t status, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "CUDA error at %s:%d during teardown: %s returned %s (%s)\n", file, line, call,
               cudaGetErrorName(status), cudaGetErrorString(status));
}

void report_cublas(cublasStatus_t status, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "cuBLAS error at %s:%d during teardown: %s returned %s\n", file, line, call,
               cublasLtGetStatusName(status));
}

}  // namespace trainer::cuda
