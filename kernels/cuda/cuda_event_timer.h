// CudaEventTimer: EventTimer over CUDA events recorded on one stream (see backend.h). Events
// are created on first use and reused after reset(), so a profiled step creates none once the
// pool has grown to the step's op count.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "kernels/backend.h"

namespace trainer::cuda {

std::unique_ptr<EventTimer> make_cuda_event_timer(cudaStream_t stream);

}  // namespace trainer::cuda
