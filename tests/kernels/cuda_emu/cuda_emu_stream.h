// The emulated CUDA runtime's host side, shared by the scheduler (cuda_emu_runtime.cpp), the
// runtime API (cuda_emu_cudart.cpp, cuda_emu_streams.cpp), cuBLASLt (cublaslt_emu.cpp) and
// NCCL (nccl_emu.cpp). Not for kernel code.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace emu {

// Issues `work` on `stream`: it runs once everything issued there before has finished (at
// once when nothing is pending), or, while the stream is captured, is recorded into the graph
// to run at each of its launches. Work on the legacy stream (nullptr) while this thread
// captures invalidates that capture (cudaErrorStreamCaptureImplicit) and nothing runs:
// stricter than the hardware, which does so only where the captured stream is a blocking one
// (ours is not), since no work of ours belongs on the legacy stream. Work on a stream whose
// capture was invalidated fails too (cudaErrorStreamCaptureInvalidated).
cudaError_t submit(cudaStream_t stream, std::function<void()> work);
// As submit, for work that finishes later (a collective waiting for its peers): `step` is
// called, in its turn and again whenever queued work runs, until it returns true; the
// stream's later work waits for it. Not in graphs: on a captured stream it invalidates the
// capture (cudaErrorStreamCaptureUnsupported).
cudaError_t submit_until_done(cudaStream_t stream, std::function<bool()> step);
// Runs queued work until `stream`'s queue, or every stream's, is empty.
void drain(cudaStream_t stream);
void drain_all();
// A call the hardware refuses while this thread captures (a wait, a host copy, an allocation):
// if one is in progress it is invalidated, the last error set, and true returned.
bool refused_while_capturing();
// The host reads device memory (a copy to the host): if any kernel ran since the last read,
// later launches run in the other order (cuda_emu.h), so an op that a test runs twice, reading
// its results between, runs once in each.
void host_read();
// The error cudaGetLastError returns next.
void set_last_error(cudaError_t error);
// A failing runtime call's result: `error`, also kept for cudaGetLastError.
inline cudaError_t fail(cudaError_t error) {
  set_last_error(error);
  return error;
}

}  // namespace emu
