// GPU discovery: how many devices answer, and what the first is called. Any error (no driver, no device, a driver older than
// the runtime) means "no GPU" rather than a failure, so device: auto falls back to the CPU and
// CUDA tests report themselves skipped.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_backend.h"

namespace trainer {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so it does not surface at a later launch check
    return 0;
  }
  return count;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return prop.name;
}

}  // namespace trainer
