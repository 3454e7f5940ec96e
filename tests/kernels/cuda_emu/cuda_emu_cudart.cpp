// The CUDA runtime API on host memory for the emulator (cuda_emu.h), as much as kernels/cuda's
// host code calls: one device with an H100's or H200's figures (sm_90), memory, streams,
// events, and stream capture into graphs. Work issued to a stream runs at once, in issue order
// (cuda_emu_stream.h). While a stream is captured its kernels, memsets, device-to-device copies,
// event records and cuBLASLt products are recorded with the arguments they had at capture, and
// run at every launch of the graph, as on a GPU. What the hardware refuses while a thread
// captures (ThreadLocal or Global mode) invalidates the capture and fails the call: waits, host
// copies, allocation and frees (cudaErrorStreamCaptureUnsupported), the legacy stream
// (cudaErrorStreamCaptureImplicit); cudaStreamEndCapture then returns
// cudaErrorStreamCaptureInvalidated and no graph.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "tests/kernels/cuda_emu/cuda_emu_stream.h"

struct CUstream_st {
  enum class Capture { none, active, invalidated } capture = Capture::none;
  std::vector<std::function<void()>> nodes;  // recorded while captured
};
struct CUevent_st {
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};

namespace emu {
namespace {

constexpr size_t kDeviceBytes = size_t(80) << 30;

// The capture this thread has in progress (what it may not do meanwhile), or null.
thread_local CUstream_st* t_capture = nullptr;
// Live allocations, for cudaMemGetInfo and to refuse freeing what cudaMalloc did not give.
thread_local std::map<void*, size_t> t_allocations;

cudaError_t fail(cudaError_t error) {
  set_last_error(error);
  return error;
}

// A call the hardware refuses while this thread captures: the capture is invalidated.
bool refused_while_capturing() {
  if (!t_capture) return false;
  t_capture->capture = CUstream_st::Capture::invalidated;
  t_capture->nodes.clear();
  set_last_error(cudaErrorStreamCaptureUnsupported);
  return true;
}

}  // namespace

cudaError_t submit(cudaStream_t stream, std::function<void()> work) {
  if (stream && stream->capture == CUstream_st::Capture::active) {
    stream->nodes.push_back(std::move(work));
    return cudaSuccess;
  }
  if (stream && stream->capture == CUstream_st::Capture::invalidated) return fail(cudaErrorStreamCaptureInvalidated);
  if (!stream && t_capture) {
    t_capture->capture = CUstream_st::Capture::invalidated;
    t_capture->nodes.clear();
    return fail(cudaErrorStreamCaptureImplicit);
  }
  work();
  return cudaSuccess;
}

}  // namespace emu

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : emu::fail(cudaErrorInvalidDevice); }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return emu::fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::strncpy(prop->name, "CUDA emulator (sm_90 limits)", sizeof prop->name - 1);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->totalGlobalMem = emu::kDeviceBytes;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->sharedMemPerBlockOptin = 227 * 1024;
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
  *ptr = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
  if (!*ptr) return emu::fail(cudaErrorMemoryAllocation);
  emu::t_allocations[*ptr] = bytes;
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  if (!ptr) return cudaSuccess;
  if (emu::t_allocations.erase(ptr) == 0) return emu::fail(cudaErrorInvalidValue);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return emu::submit(stream, [dst, value, bytes] { std::memset(dst, value, bytes); });
}
// Host copies are synchronous from pageable memory (all of ours), so they are never captured.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (kind == cudaMemcpyDeviceToDevice)
    return emu::submit(stream, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  if (stream && stream->capture != CUstream_st::Capture::none) return emu::fail(cudaErrorStreamCaptureInvalidated);
  if (kind != cudaMemcpyHostToDevice) emu::host_read();
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  if (kind != cudaMemcpyHostToDevice) emu::host_read();
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  *stream = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream) return emu::fail(cudaErrorInvalidResourceHandle);
  if (emu::t_capture == stream) emu::t_capture = nullptr;
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (!stream) return emu::fail(cudaErrorStreamCaptureUnsupported);  // the legacy stream is never captured
  if (mode == cudaStreamCaptureModeRelaxed) return emu::fail(cudaErrorNotSupported);  // not modelled
  if (stream->capture != CUstream_st::Capture::none || emu::t_capture) return emu::fail(cudaErrorIllegalState);
  stream->capture = CUstream_st::Capture::active;
  stream->nodes.clear();
  emu::t_capture = stream;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  *graph = nullptr;
  if (!stream || stream->capture == CUstream_st::Capture::none) return emu::fail(cudaErrorIllegalState);
  const bool invalidated = stream->capture == CUstream_st::Capture::invalidated;
  stream->capture = CUstream_st::Capture::none;
  if (emu::t_capture == stream) emu::t_capture = nullptr;
  if (invalidated) return emu::fail(cudaErrorStreamCaptureInvalidated);
  *graph = new CUgraph_st{std::exchange(stream->nodes, {})};
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (!stream) {
    *status = cudaStreamCaptureStatusNone;
    if (emu::t_capture) return emu::fail(cudaErrorStreamCaptureImplicit);
    return cudaSuccess;
  }
  switch (stream->capture) {
    case CUstream_st::Capture::none: *status = cudaStreamCaptureStatusNone; break;
    case CUstream_st::Capture::active: *status = cudaStreamCaptureStatusActive; break;
    case CUstream_st::Capture::invalidated: *status = cudaStreamCaptureStatusInvalidated; break;
  }
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!graph) return emu::fail(cudaErrorInvalidValue);
  if (nodes) return emu::fail(cudaErrorNotSupported);  // the nodes themselves are not modelled
  *count = graph->nodes.size();
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return emu::fail(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return emu::fail(cudaErrorInvalidValue);
  return emu::submit(stream, [nodes = exec->nodes] {
    for (const std::function<void()>& node : nodes) node();
  });
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event) return emu::fail(cudaErrorInvalidResourceHandle);
  return emu::submit(stream, [event] {
    event->recorded = true;
    event->at = std::chrono::steady_clock::now();
  });
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event) return emu::fail(cudaErrorInvalidResourceHandle);
  if (emu::refused_while_capturing()) return cudaErrorStreamCaptureUnsupported;
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->recorded || !end->recorded) return emu::fail(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}

}  // extern "C"
