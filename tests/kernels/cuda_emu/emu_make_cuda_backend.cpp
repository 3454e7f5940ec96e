// In test_cuda_emu, the CUDA backend factory builds the emulated backend (emu_backend.h), so the
// CUDA op tests of tests/kernels/cuda that need no matrix product and no tensor-core kernel run
// here unchanged through their make_rig. Linked into that test only, in place of
// kernels/cuda/cuda_backend.cpp's definition (which the static library then never pulls in).
#include "kernels/cuda/cuda_backend.h"
#include "tests/kernels/cuda_emu/emu_backend.h"

namespace trainer {

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return testing::make_emulated_cuda_backend(options);
}

}  // namespace trainer
