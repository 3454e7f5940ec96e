// DeviceMemory (cudaMalloc with live/peak accounting) and the growing scratch Workspace.
#include "kernels/cuda/cuda_workspace.h"

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "kernels/base/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_graph.h"

namespace trainer::cuda {

void* DeviceMemory::alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  TRAINER_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  sizes_[ptr] = bytes;
  live_ += bytes;
  if (live_ > peak_) peak_ = live_;
  return ptr;
}

void DeviceMemory::free(void* ptr) {
  if (!ptr) return;
  auto it = sizes_.find(ptr);
  TRAINER_CHECK(it != sizes_.end(), "freeing a pointer this CUDA backend did not allocate");
  live_ -= it->second;
  sizes_.erase(it);
  TRAINER_CUDA_CHECK(cudaFree(ptr));
}

Workspace::~Workspace() {
  if (!ptr_) return;
  // A destructor must not throw: failures are reported, the buffer leaks at teardown.
  TRAINER_CUDA_REPORT(cudaStreamSynchronize(stream_));
  try {
    memory_.free(ptr_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

void* Workspace::get(size_t bytes) {
  if (bytes <= bytes_) return ptr_;
  if (stream_capturing(stream_))
    throw std::logic_error("the CUDA workspace must grow from " + std::to_string(bytes_) + " to " +
                           std::to_string(bytes) + " bytes while capturing a graph; run the captured work once "
                           "eagerly first");
  if (ptr_) {
    TRAINER_CUDA_CHECK(cudaStreamSynchronize(stream_));
    memory_.free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  ptr_ = memory_.alloc(bytes);
  bytes_ = bytes;
  ++generation_;
  return ptr_;
}

}  // namespace trainer::cuda
