// The emulated CUDA runtime's host side, shared by the scheduler (cuda_emu_runtime.cpp), the
// runtime API (cuda_emu_cudart.cpp) and cuBLASLt (cublaslt_emu.cpp). Not for kernel code.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace emu {

// Issues `work` on `stream` in issue order: it runs at once (the emulator has no asynchrony),
// or, while the stream is captured, is recorded into the graph to run at each of its launches.
// Work on the legacy stream (nullptr) while this thread captures invalidates that capture, as
// the hardware's ThreadLocal and Global modes do: cudaErrorStreamCaptureImplicit, and nothing
// runs; so does work on a stream whose capture was invalidated (cudaErrorStreamCaptureInvalidated).
cudaError_t submit(cudaStream_t stream, std::function<void()> work);
// The host reads device memory (a copy to the host): if any kernel ran since the last read,
// later launches run in the other order (cuda_emu.h), so an op that a test runs twice, reading
// its results between, runs once in each.
void host_read();
// The error cudaGetLastError returns next.
void set_last_error(cudaError_t error);

}  // namespace emu
