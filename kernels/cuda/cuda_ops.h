// Host entry points of the CUDA kernels (one .cu file per op family), called by CudaBackend.
// Each function checks its arguments (dtypes, shapes, device) with TRAINER_CHECK, launches
// on ctx.stream and checks every launch. Semantics are exactly those of kernels/backend.h;
// "act" is f32 or bf16 as the tensors say.
//
// Determinism: our kernels give bit-identical results run to run and on any GPU model: grids
// that reduce are fixed by the problem size (never by the SM count), reductions combine in a
// fixed order, and no floating-point atomics are used anywhere. Matrix products go through
// cuBLASLt, which is deterministic run to run on one GPU model but may pick other algorithms
// (other rounding) on another.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_workspace.h"

namespace trainer::cuda {

struct Context {
  cudaStream_t stream = nullptr;
  Workspace* workspace = nullptr;
};

// Argument checks shared by the launchers.
void expect_cuda(const Tensor& t, const char* what);
void expect_float(const Tensor& t, const char* what);  // f32 or bf16, on the GPU
void expect_dtype(const Tensor& t, DType dtype, const char* what);
bool aligned16(const void* ptr);

void encoder_forward(const Context& ctx, Tensor out, Tensor tokens, Tensor wte, Tensor wpe,
                     int64_t vocab_start);
void encoder_backward(const Context& ctx, Tensor dwte, Tensor dwpe, Tensor dout, Tensor tokens,
                      int64_t vocab_start);

void layernorm_forward(const Context& ctx, Tensor out, Tensor mean, Tensor rstd, Tensor inp,
                       Tensor weight, Tensor bias);
void layernorm_backward(const Context& ctx, Tensor dinp, Tensor dweight, Tensor dbias,
                        Tensor dout, Tensor inp, Tensor weight, Tensor mean, Tensor rstd,
                        Accumulate dinp_mode);

void bias_backward(const Context& ctx, Tensor dbias, Tensor dout);
// out (M,N) += bias (N) broadcast over rows; the fallback when no cuBLASLt epilogue fits.
void bias_add_rows(const Context& ctx, Tensor out, Tensor bias);

void attention_forward(const Context& ctx, Tensor out, Tensor lse, Tensor qkv, int n_head);
void attention_backward(const Context& ctx, Tensor dqkv, Tensor dout, Tensor qkv, Tensor out,
                        Tensor lse, int n_head);

void gelu_forward(const Context& ctx, Tensor out, Tensor inp);
void gelu_backward(const Context& ctx, Tensor dinp, Tensor inp, Tensor dout);
void add(const Context& ctx, Tensor out, Tensor a, Tensor b);
void scale(const Context& ctx, Tensor x, float alpha);
void fill(const Context& ctx, Tensor x, float value);
void cast(const Context& ctx, Tensor dst, Tensor src);
double sum_squares(const Context& ctx, Tensor x);

void xent_max(const Context& ctx, Tensor maxes, Tensor logits, int64_t valid_cols);
void xent_sumexp(const Context& ctx, Tensor sumexp, Tensor target_logit, Tensor logits,
                 Tensor maxes, Tensor targets, int64_t vocab_start, int64_t valid_cols);
void xent_loss(const Context& ctx, Tensor losses, Tensor maxes, Tensor sumexp,
               Tensor target_logit);
void xent_backward(const Context& ctx, Tensor dlogits, Tensor logits, Tensor maxes,
                   Tensor sumexp, Tensor targets, int64_t vocab_start, int64_t valid_cols,
                   float dloss);

enum class Rounding : uint8_t { nearest, stochastic };
void adamw(const Context& ctx, Tensor param, Tensor grad, Tensor m, Tensor v, Tensor param_copy,
           const AdamWStep& h, Rounding rounding);

}  // namespace trainer::cuda
