// Placeholder until the CUDA backend lands.
#include "kernels/cuda/cuda_backend.h"

#include <stdexcept>

namespace trainer {

int cuda_device_count() { return 0; }
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions&) { throw std::logic_error("CUDA backend not built yet"); }

}  // namespace trainer
