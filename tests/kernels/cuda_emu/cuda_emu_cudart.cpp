// The CUDA runtime API on host memory for the emulator (cuda_emu.h), as much as kernels/cuda's
// and parallel/cuda's host code calls: devices, memory and copies (streams, events and graphs:
// cuda_emu_streams.cpp). A node of 8 devices with an H100's or H200's figures (sm_90; a test
// may lower the opt-in shared memory, cuda_emu_counts.h), each with its own UUID so that ranks
// of one node take distinct ones as on a GPU node; memory is the process's, whichever device
// is current. Copies to the host wait for their stream's
// queued work, as on a GPU; host-to-device copies from pageable memory (all of ours) are staged
// at the call and land in stream order. Allocation and frees are refused while this thread
// captures, as the hardware does.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "tests/kernels/cuda_emu/cuda_emu_counts.h"
#include "tests/kernels/cuda_emu/cuda_emu_stream.h"

namespace emu {
namespace {

constexpr int kDevices = 8;
constexpr size_t kDeviceBytes = size_t(80) << 30;

thread_local int t_device = 0;
// Live allocations, for cudaMemGetInfo and to refuse freeing what cudaMalloc did not give.
thread_local std::map<void*, size_t> t_allocations;

}  // namespace
}  // namespace emu

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = emu::kDevices;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = emu::t_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= emu::kDevices) return emu::fail(cudaErrorInvalidDevice);
  emu::t_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= emu::kDevices) return emu::fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::strncpy(prop->name, "CUDA emulator (sm_90 limits)", sizeof prop->name - 1);
  prop->uuid.bytes[0] = char(0xe0);
  prop->uuid.bytes[15] = char(device);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->totalGlobalMem = emu::kDeviceBytes;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->sharedMemPerBlockOptin = emu::optin_shared_limit();
  prop->maxThreadsPerBlock = 1024;
  prop->warpSize = 32;
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  size_t live = 0;
  for (const auto& [ptr, bytes] : emu::t_allocations) live += bytes;
  *total_bytes = emu::kDeviceBytes;
  *free_bytes = emu::kDeviceBytes - live;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  *ptr = std::aligned_alloc(256, rounded);
  if (!*ptr) return emu::fail(cudaErrorMemoryAllocation);
  // CUDA promises nothing of new memory: NaN bytes here, so that what reads before writing shows.
  std::memset(*ptr, 0xFF, rounded);
  emu::t_allocations[*ptr] = bytes;
  return cudaSuccess;
}
// As on a GPU, a free waits for the device: queued work may still use the memory.
cudaError_t cudaFree(void* ptr) {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  if (!ptr) return cudaSuccess;
  emu::drain_all();
  if (emu::t_allocations.erase(ptr) == 0) return emu::fail(cudaErrorInvalidValue);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return emu::submit(stream, [dst, value, bytes] { std::memset(dst, value, bytes); });
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (kind == cudaMemcpyDeviceToDevice)
    return emu::submit(stream, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  if (kind == cudaMemcpyHostToDevice) {
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                                static_cast<const unsigned char*>(src) + bytes);
    return emu::submit(stream, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  }
  emu::drain(stream);
  emu::host_read();
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  emu::drain_all();
  if (kind != cudaMemcpyHostToDevice) emu::host_read();
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

}  // extern "C"
