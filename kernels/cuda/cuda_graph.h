// CUDA graphs of the backend's compute stream (Backend::begin_capture / end_capture): the
// stream is captured in thread-local mode (this thread's unsafe calls, a cudaMalloc or a
// synchronize, fail the capture; other threads, the NCCL watchdog's, are not affected), the
// graph instantiated once and launched on the same stream by replay(). A graph names the
// workspace's buffer, so it is valid only while the workspace has not grown since (its
// generation); the owner captures again when valid() is false.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "kernels/cuda/cuda_workspace.h"
#include "kernels/op_graph.h"

namespace trainer::cuda {

void begin_stream_capture(cudaStream_t stream);
// Ends the capture and instantiates it; a capture an unsafe call invalidated throws, naming
// cudaStreamEndCapture's status.
std::unique_ptr<OpGraph> end_stream_capture(cudaStream_t stream, const Workspace& workspace);
// Ends a capture that failed half way, dropping what it held; reports, never throws.
void cancel_stream_capture(cudaStream_t stream) noexcept;
// Whether `stream` is being captured (the workspace must not grow then).
bool stream_capturing(cudaStream_t stream);

}  // namespace trainer::cuda
