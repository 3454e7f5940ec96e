// The CUDA backend factory and GPU discovery, usable from host-only code.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace trainer {

// Number of usable GPUs; any error from the driver or runtime counts as none.
int cuda_device_count();
// Builds the CUDA backend on GPU (options.local_rank % device count).
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace trainer
