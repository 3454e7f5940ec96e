// The reference loop of AdamW (AdamWOp): a literal definition, single thread, that
// tests/kernels/test_cpu_adamw.cpp holds the fast kernel to.
// Templates over the float type F: the tests run them in float, and in double for central finite
// differences. Pointers are contiguous row-major; shapes are those of the op's struct.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/backend_adamw_ops.h"

namespace trainer::ref {

// AdamW (PyTorch's formulation): p *= 1 - lr*wd; m, v moments of grad*grad_scale;
// p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
// param_copy (n) or nullptr receives the updated parameters.
template <class F>
void adamw(F* param, const F* grad, F* m, F* v, F* param_copy, int64_t n, const AdamWStep& h) {
  const double t = double(h.step);
  const F bias1 = F(1.0 - std::pow(double(h.beta1), t));
  const F bias2_sqrt = F(std::sqrt(1.0 - std::pow(double(h.beta2), t)));
  const F lr = F(h.lr);
  const F b1 = F(h.beta1);
  const F b2 = F(h.beta2);
  for (int64_t i = 0; i < n; ++i) {
    const F g = grad[i] * F(h.grad_scale);
    param[i] *= F(1) - lr * F(h.weight_decay);
    m[i] = b1 * m[i] + (F(1) - b1) * g;
    v[i] = b2 * v[i] + (F(1) - b2) * g * g;
    param[i] -= lr / bias1 * m[i] / (std::sqrt(v[i]) / bias2_sqrt + F(h.eps));
    if (param_copy) param_copy[i] = param[i];
  }
}

}  // namespace trainer::ref
