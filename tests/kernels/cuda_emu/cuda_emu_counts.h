// Named counts that the CUDA emulator's instructions and launches keep (cuda_emu_runtime.cpp),
// such as ldmatrix's shared-memory bank conflicts or "kernel launches", for tests to read; and
// the one device limit a test may change. Separate from cuda_emu.h, whose device macros are for
// kernel code only. Per OS thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace emu {

void add_count(const std::string& name, int64_t n);
int64_t count(const std::string& name);
void reset_counts();

// The shared memory a block may opt in to, as the emulated GPU reports it
// (cudaDevAttrMaxSharedMemoryPerBlockOptin, cudaDeviceProp) and enforces it
// (cudaFuncSetAttribute): an H100's 227 KiB, unless a test sets another GPU's, such as an
// RTX 4090's (sm_89) 99 KiB, to reach the kernels' smaller-tile variants.
size_t optin_shared_limit();
void set_optin_shared_limit(size_t bytes);

}  // namespace emu
