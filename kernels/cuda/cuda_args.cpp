// Argument checks shared by the CUDA launchers (cuda_ops.h). A failure is an internal error:
// the model layer passed a tensor that breaks the Backend contract.
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

void expect_cuda(const Tensor& t, const char* what) {
  TRAINER_CHECK(t.defined(), std::string(what) + " is undefined");
  TRAINER_CHECK(t.device == Device::cuda,
                std::string(what) + " must live on the GPU, got a " + device_name(t.device) +
                    " tensor");
}

void expect_float(const Tensor& t, const char* what) {
  expect_cuda(t, what);
  TRAINER_CHECK(t.dtype == DType::f32 || t.dtype == DType::bf16,
                std::string(what) + " must be f32 or bf16, got " + dtype_name(t.dtype));
}

void expect_dtype(const Tensor& t, DType dtype, const char* what) {
  expect_cuda(t, what);
  TRAINER_CHECK(t.dtype == dtype, std::string(what) + " must be " + dtype_name(dtype) + ", got " +
                                      dtype_name(t.dtype));
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace trainer::cuda
