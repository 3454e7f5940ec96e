// The CUDA backend's ops on the CPU emulator (cuda_emu.h): a Backend whose memory is host
// memory labelled as the GPU's and whose ops are kernels/cuda's own host code and kernels,
// rewritten by emu_translate.py and run by the emulator. For the kernel tests only: it runs
// what our kernels compute, never how fast. Matrix products (cuBLASLt) cannot run here: the
// CPU backend computes them (on f32 copies, rounded back once), so a whole model can train on
// the emulated kernels, but cuda_matmul.cpp itself is not tested.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace trainer::testing {

// options.precision and options.stochastic_rounding as CudaBackend takes them; attention:
// cudnn is a ConfigError (cuDNN cannot run here).
std::unique_ptr<Backend> make_emulated_cuda_backend(const BackendOptions& options);

}  // namespace trainer::testing
