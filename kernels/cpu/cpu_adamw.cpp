// AdamW update (fast CPU path), PyTorch's formulation so that parity runs agree:
//   g = grad * grad_scale; p *= 1 - lr * wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// One streaming pass over param, grad, m and v (memory-bandwidth bound); element-wise, so
// the result does not depend on the thread count.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"

namespace trainer::cpu {

namespace {

struct AdamWConstants {
  float step_size, inv_bias2_sqrt, decay, b1, b2, grad_scale, eps;
};

// kCopy: also write the updated parameters to param_copy. A template rather than a branch in
// the loop body, which would keep GCC from vectorising it.
template <bool kCopy>
void adamw_loop(float* param, const float* grad, float* m, float* v, float* param_copy,
                int64_t n, const AdamWConstants k) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 15))
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * k.grad_scale;
    const float mi = k.b1 * m[i] + (1.0f - k.b1) * g;
    const float vi = k.b2 * v[i] + (1.0f - k.b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float p =
        param[i] * k.decay - k.step_size * mi / (std::sqrt(vi) * k.inv_bias2_sqrt + k.eps);
    param[i] = p;
    if constexpr (kCopy) param_copy[i] = p;
  }
}

}  // namespace

void adamw(float* param, const float* grad, float* m, float* v, float* param_copy, int64_t n,
           const AdamWStep& h) {
  const double t = double(h.step);
  AdamWConstants k;
  k.step_size = float(double(h.lr) / (1.0 - std::pow(double(h.beta1), t)));
  k.inv_bias2_sqrt = float(1.0 / std::sqrt(1.0 - std::pow(double(h.beta2), t)));
  k.decay = 1.0f - h.lr * h.weight_decay;
  k.b1 = h.beta1;
  k.b2 = h.beta2;
  k.grad_scale = h.grad_scale;
  k.eps = h.eps;
  if (param_copy)
    adamw_loop<true>(param, grad, m, v, param_copy, n, k);
  else
    adamw_loop<false>(param, grad, m, v, nullptr, n, k);
}

void run(const AdamWOp& op) {
  adamw(f32(op.param), f32(op.grad), f32(op.m), f32(op.v), f32(op.param_copy), op.param.numel(), op.h);
}

// The pieces in order, each as its single-tensor op: the same bits.
void run(const AdamWManyOp& op) {
  for (const AdamWOp& p : op.pieces) run(p);
}

}  // namespace trainer::cpu
