// Status checks for the CUDA runtime, cuBLAS/cuBLASLt and kernel launches. A failed call is an
// internal error: it throws std::runtime_error naming the call, its status and file:line, so
// main prints it once and, under MPI, aborts the job. Every CUDA call in kernels/cuda goes
// through one of these macros, and every kernel launch is followed by TRAINER_LAUNCH_CHECK().
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace trainer::cuda {

[[noreturn]] void fail_cuda(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line);
// For teardown paths (destructors cannot throw): prints the failure to stderr.
void report_cuda(cudaError_t status, const char* call, const char* file, int line) noexcept;
void report_cublas(cublasStatus_t status, const char* call, const char* file, int line) noexcept;

}  // namespace trainer::cuda

#define TRAINER_CUDA_CHECK(call)                                                  \
  do {                                                                            \
    const cudaError_t trainer_status_ = (call);                                   \
    if (trainer_status_ != cudaSuccess)                                           \
      ::trainer::cuda::fail_cuda(trainer_status_, #call, __FILE__, __LINE__);     \
  } while (0)

#define TRAINER_CUBLAS_CHECK(call)                                                \
  do {                                                                            \
    const cublasStatus_t trainer_status_ = (call);                                \
    if (trainer_status_ != CUBLAS_STATUS_SUCCESS)                                 \
      ::trainer::cuda::fail_cublas(trainer_status_, #call, __FILE__, __LINE__);   \
  } while (0)

#define TRAINER_CUDA_REPORT(call)                                                 \
  do {                                                                            \
    const cudaError_t trainer_status_ = (call);                                   \
    if (trainer_status_ != cudaSuccess)                                           \
      ::trainer::cuda::report_cuda(trainer_status_, #call, __FILE__, __LINE__);   \
  } while (0)

#define TRAINER_CUBLAS_REPORT(call)                                               \
  do {                                                                            \
    const cublasStatus_t trainer_status_ = (call);                                \
    if (trainer_status_ != CUBLAS_STATUS_SUCCESS)                                 \
      ::trainer::cuda::report_cublas(trainer_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After every <<<...>>> launch: reports a bad configuration (grid, shared memory) at the
// launch site. Faults inside the kernel surface at the next synchronizing call.
#define TRAINER_LAUNCH_CHECK()                                                    \
  do {                                                                            \
    const cudaError_t trainer_status_ = cudaGetLastError();                       \
    if (trainer_status_ != cudaSuccess)                                           \
      ::trainer::cuda::fail_cuda(trainer_status_, "kernel launch", __FILE__, __LINE__); \
  } while (0)
