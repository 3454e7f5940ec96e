// The matrix product (with its fused epilogues) and the bias gradient (split out of backend.h,
// which includes this file and states the rules every op follows: dtypes "act"/"f32", "(R, C)"
// matrices, aliasing). Each op's line in the op list (op_list.h) sits under the structs.
#pragma once

#include "kernels/op_modes.h"
#include "kernels/tensor.h"

namespace trainer {

// out (M, N) = op(a) (M, K) x op(b) (K, N) [+ bias (N) broadcast over rows]; with
// Accumulate::add the product is added to out. a is (M, K), or (K, M) with ta; b is (K, N), or
// (N, K) with tb; a, b act; out act or f32 (f32 is how weight gradients are accumulated);
// bias act, optional; gelu_out (M, N) with out's dtype, optional, only with
// Accumulate::overwrite: it receives gelu(out) too (a fused epilogue where it pays).
// residual (M, N) with out's dtype, optional, only with Accumulate::overwrite and without
// gelu_out: out = (product + bias) + residual, the residual stream's add after a row-parallel
// layer (the epilogue reads it, where a separate add would read out and residual and write out
// again). The CPU adds it as AddOp would after the product, so its bits are the product's then
// the add's; CUDA rounds once. residual may not overlap out (Accumulate::add is that form).
// The GELU's backward rides on the product that feeds it (the MLP's dX through fc_proj):
// gelu_inp (M, N) with out's dtype, optional: out = product * gelu'(gelu_inp), as
// GeluBackwardOp with the product as dout; dbias (N) f32, optional: dbias += the column sums
// of that final out, as BiasBackwardOp. Both only with Accumulate::overwrite and without bias,
// gelu_out and residual. The CPU runs the product then those two ops, so its bits are theirs;
// CUDA's bf16 path takes cuBLASLt's DGELU_BGRAD epilogue, which rounds out once and sums the
// unrounded values.
// A weight gradient's product carries its bias gradient: dbias_a (M) f32, optional, only with
// ta = transpose (a is the (K, M) gradient dout, b the layer's (K, N) input, out its weight
// gradient): dbias_a += the column sums of a, as BiasBackwardOp on a. Any mode; not with bias,
// gelu_out, residual, gelu_inp or dbias. The CPU runs the product then that op, so its bits are
// theirs; CUDA's bf16 path takes cuBLASLt's BGRADB epilogue (the reduction over the GEMM's k).
// K = 0 is an empty sum: out = bias or 0 (out += bias with Accumulate::add).
struct MatmulOp {
  static constexpr const char* kName = "matmul";
  Tensor out, a, b;
  Transpose ta = Transpose::none, tb = Transpose::none;
  Tensor bias;
  Accumulate mode = Accumulate::overwrite;
  Tensor gelu_out;
  Tensor residual;
  Tensor gelu_inp;
  Tensor dbias;
  Tensor dbias_a;
};
// dbias (N) f32 += column sums of dout (M, N) act.
struct BiasBackwardOp {
  static constexpr const char* kName = "bias_backward";
  Tensor dbias, dout;
};

}  // namespace trainer

#define TRAINER_MATMUL_OPS(X)                    \
  X(MatmulOp, void, matmul_shape(op))            \
  X(BiasBackwardOp, void, shape_of(op.dout))
