// init_normal on the device: each thread draws one Philox block's four normals
// (kernels/base/box_muller.h, whose __f*_rn operations round as the host's do) and writes the
// block's elements that fall in [first, first + n). The product with std is in double, as on
// the host, so a GPU run's first weights are the CPU run's bit for bit.
#include <algorithm>

#include "kernels/base/box_muller.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace trainer::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void init_normal_kernel(float* out, int64_t n, NormalFill fill) {
  const int64_t begin = fill.first, end = fill.first + n;
  const int64_t first_block = begin >> 2, blocks = ((end + 3) >> 2) - first_block;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < blocks; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = first_block + i;
    const box_muller::Normals z = box_muller::normal4(fill.key, fill.stream, uint64_t(b));
    // Unrolled, so z.value is indexed by constants and stays in registers.
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t e = 4 * b + j;
      if (e < begin || e >= end) continue;
      out[e - begin] = e >= fill.zero_from ? 0.0f : __double2float_rn(__dmul_rn(fill.std, double(z.value[j])));
    }
  }
}

}  // namespace

void run(const Context& ctx, const InitNormalOp& op) {
  const int64_t n = op.out.numel();
  if (n == 0) return;
  const int64_t blocks = ((op.fill.first + n + 3) >> 2) - (op.fill.first >> 2);
  const int grid = int(std::max<int64_t>(1, std::min<int64_t>(ceil_div(blocks, kThreads), 1 << 16)));
  init_normal_kernel<<<grid, kThreads, 0, ctx.stream>>>(op.out.ptr<float>(), n, op.fill);
  TRAINER_LAUNCH_CHECK();
}

}  // namespace trainer::cuda
