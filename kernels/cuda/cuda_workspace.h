// Device memory accounting and the scratch workspace of the CUDA backend.
// Invariants: all device memory comes from cudaMalloc (never managed memory) through
// DeviceMemory, which counts live and peak bytes. The workspace is one buffer that grows to
// the largest request seen (in practice during the first step) and is then reused: ops run in
// order on the backend's single compute stream, so one op's scratch is never live while the
// next op runs. Growing synchronizes the stream first, so no queued kernel still uses the old
// buffer when it is freed.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace trainer::cuda {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* alloc(size_t bytes);
  void free(void* ptr);
  size_t live_bytes() const { return live_; }
  size_t peak_bytes() const { return peak_; }

 private:
  std::unordered_map<void*, size_t> sizes_;
  size_t live_ = 0;
  size_t peak_ = 0;
};

class Workspace {
 public:
  Workspace(DeviceMemory& memory, cudaStream_t stream) : memory_(memory), stream_(stream) {}
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // At least `bytes` of device scratch, 256-byte aligned, contents undefined; valid until the
  // next call. Growing while the stream is captured into a graph is a logic_error (the graph
  // would name the freed buffer): a step runs once eagerly before it is captured.
  void* get(size_t bytes);
  // Counts the times the buffer moved: a graph that names it is stale once this changes.
  uint64_t generation() const { return generation_; }

 private:
  DeviceMemory& memory_;
  cudaStream_t stream_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  uint64_t generation_ = 0;
};

// Hands out consecutive 256-byte aligned pieces of one workspace request. Size the request
// with the same sequence of take() calls on a null base first (see bytes()).
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base) : base_(static_cast<char*>(base)) {}
  template <class T>
  T* take(size_t count) {
    char* p = base_ ? base_ + used_ : nullptr;
    used_ += (count * sizeof(T) + 255) / 256 * 256;
    return reinterpret_cast<T*>(p);
  }
  size_t bytes() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

}  // namespace trainer::cuda
