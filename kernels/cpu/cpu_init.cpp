// Parameter initialisation on the CPU: the host's normal draw (init_normal.h), the same bits
// CUDA's kernel draws.
#include "kernels/cpu/cpu_ops.h"
#include "kernels/init_normal.h"

namespace trainer::cpu {

void run(const InitNormalOp& op) { init_normal_host(f32(op.out), op.out.numel(), op.fill); }

}  // namespace trainer::cpu
