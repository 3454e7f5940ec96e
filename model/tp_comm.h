// The tensor-parallel communication pairs (Megatron's f and g), side by side:
//   copy   (f): identity in forward, all-reduce of the gradient in backward — placed before a
//               column-parallel layer, whose input every rank holds whole.
//   reduce (g): all-reduce in forward, identity in backward — placed after a row-parallel
//               layer, whose outputs are partial sums.
// With sequence parallelism the residual stream (and LayerNorm) holds only this rank's N/tp
// rows, and the pairs become:
//   gather  (f): all-gather the rows in forward, reduce-scatter the gradient in backward;
//   scatter (g): reduce-scatter the partial sums in forward, all-gather the gradient in backward.
// With a tensor group of one rank (or none) every function is the identity.
#pragma once

#include "kernels/tensor.h"
#include "parallel/comm.h"

namespace trainer {

inline bool tp_active(Comm* tp) { return tp && tp->size() > 1; }

inline void tp_copy_forward(Tensor /*x*/, Comm* /*tp*/) {}
inline void tp_copy_backward(Tensor dx, Comm* tp) {
  if (tp_active(tp)) tp->all_reduce(dx, ReduceOp::sum);
}

inline void tp_reduce_forward(Tensor x, Comm* tp) {
  if (tp_active(tp)) tp->all_reduce(x, ReduceOp::sum);
}
inline void tp_reduce_backward(Tensor /*dx*/, Comm* /*tp*/) {}

// The rows this rank holds of a (N, X) tensor under sequence parallelism.
inline Tensor sp_rows(Tensor full, Comm* tp) {
  const int64_t n = full.size(0) / tp->size();
  return full.rows(n * tp->rank(), n * (tp->rank() + 1));
}
// full (N, X): this rank's rows (sp_rows) are written; afterwards every row is.
inline void sp_gather_forward(Tensor full, Comm* tp) { tp->all_gather(full, sp_rows(full, tp)); }
// local (N/tp, X) = this rank's rows of the sum over the group of full_grad (N, X).
inline void sp_gather_backward(Tensor local, Tensor full_grad, Comm* tp) { tp->reduce_scatter(local, full_grad); }

// local (N/tp, X) = this rank's rows of the sum over the group of partial (N, X).
inline void sp_scatter_forward(Tensor local, Tensor partial, Comm* tp) { tp->reduce_scatter(local, partial); }
// full_grad (N, X) = every rank's local_grad (N/tp, X), in rank order.
inline void sp_scatter_backward(Tensor full_grad, Tensor local_grad, Comm* tp) { tp->all_gather(full_grad, local_grad); }

}  // namespace trainer
