// The tensor-parallel communication pairs (Megatron's f and g), side by side:
//   copy   (f): identity in forward, all-reduce of the gradient in backward — placed before a
//               column-parallel layer, whose input every rank holds whole.
//   reduce (g): all-reduce in forward, identity in backward — placed after a row-parallel
//               layer, whose outputs are partial sums.
// With a tensor group of one rank (or none) every function is the identity.
#pragma once

#include "kernels/tensor.h"
#include "parallel/comm.h"

namespace trainer {

inline void tp_copy_forward(Tensor /*x*/, Comm* /*tp*/) {}
inline void tp_copy_backward(Tensor dx, Comm* tp) {
  if (tp && tp->size() > 1) tp->all_reduce(dx, ReduceOp::sum);
}

inline void tp_reduce_forward(Tensor x, Comm* tp) {
  if (tp && tp->size() > 1) tp->all_reduce(x, ReduceOp::sum);
}
inline void tp_reduce_backward(Tensor /*dx*/, Comm* /*tp*/) {}

}  // namespace trainer
