// Named counts that the CUDA emulator's instructions keep (cuda_emu_runtime.cpp), such as
// ldmatrix's shared-memory bank conflicts, for tests to read. Separate from cuda_emu.h, whose
// device macros are for kernel code only. Per OS thread.
#pragma once

#include <cstdint>
#include <string>

namespace emu {

void add_count(const std::string& name, int64_t n);
int64_t count(const std::string& name);
void reset_counts();

}  // namespace emu
