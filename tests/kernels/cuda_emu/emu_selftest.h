// Host entry points of emu_selftest.cu: kernels run on the emulator to show what it catches.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace trainer::testing::emu_selftest {

// One sum per block of `threads` consecutive values (threads a multiple of 32, at most 1024).
std::vector<float> block_sums(const std::vector<float>& in, int blocks, int threads, bool barrier);
// 32 lanes each read the next lane's lane * 10; with early_exit lane 5 has left.
std::vector<int> shuffle(bool early_exit);
// Block b's read of a shared slot that only block 0 writes.
std::vector<float> unwritten_shared(int blocks);
// The 4 floats a 16-byte cp.async brings from an aligned array plus misalign_floats.
std::vector<float> cp_async_16(int misalign_floats);
// cudaGetLastError after a launch of (1, blocks_y) blocks of `threads` with `shared_bytes` of
// dynamic shared memory, after opting in to `opt_in_bytes` (0: no opt-in); cudaErrorUnknown
// when the launch ran but gave a wrong result.
cudaError_t launch_error(int blocks_y, int threads, size_t shared_bytes, int opt_in_bytes);

}  // namespace trainer::testing::emu_selftest
