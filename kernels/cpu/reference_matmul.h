// Reference versions of every Backend op: plain single-threaded loops that follow the
// definitions literally, with no blocking, no BLAS and no approximations (std::exp, std::tanh).
// They are what the tests compare the fast CPU kernels (and, through them, the CUDA kernels)
// against. Templates over the float type F, instantiated for float and double, so that the
// tests can run forward passes in double for central finite differences.
// Semantics and shapes are those of kernels/backend.h; pointers are contiguous row-major.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace trainer::ref {

constexpr double kLayernormEps = 1e-5;

// out (B,T,C); tokens (B,T); wte (V,C) holds ids [vocab_start, vocab_start + V); wpe (>=T,C)
// or nullptr.
template <class F>
void encoder_forward(F* out, const int32_t* tokens, const F* wte, const F* wpe, int64_t B,
                     int64_t T, int64_t C, int64_t V, int64_t vocab_start);
// dwte (V,C) +=; dwpe (>=T,C) += or nullptr; dout (B,T,C).
template <class F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const int32_t* tokens, int64_t B,
                      int64_t T, int64_t C, int64_t V, int64_t vocab_start);

// out (N,C); mean, rstd (N); inp (N,C); weight, bias (C). Biased variance, eps 1e-5.
template <class F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias,
                       int64_t N, int64_t C);
// dinp (N,C) overwritten or added per dinp_mode; dweight, dbias (C) +=.
template <class F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp,
                        const F* weight, const F* mean, const F* rstd, int64_t N, int64_t C,
                        Accumulate dinp_mode);

// out (M,N) = op(a) (M,K) x op(b) (K,N) [+ bias (N)], overwritten or added per mode;
// a is stored (M,K), or (K,M) when transposed; b (K,N), or (N,K) when transposed.
// gelu_out (M,N) or nullptr receives gelu(out).
template <class F>
void matmul(F* out, const F* a, const F* b, const F* bias, int64_t M, int64_t N, int64_t K,
            Transpose ta, Transpose tb, Accumulate mode, F* gelu_out);
// dbias (N) += column sums of dout (M,N).
template <class F>
void bias_backward(F* dbias, const F* dout, int64_t M, int64_t N);

// Causal attention, scale 1/sqrt(D), query head h reading k/v head h / (H / Hkv).
// qkv (B,T,(H+2*Hkv)*D) as [q heads | k heads | v heads]; out (B,T,H*D); lse (B,H,T).
template <class F>
void attention_forward(F* out, F* lse, const F* qkv, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                       int64_t D);
// dqkv (B,T,(H+2*Hkv)*D) overwritten. Recomputes the probabilities from q, k and lse.
template <class F>
void attention_backward(F* dqkv, const F* dout, const F* qkv, const F* lse, int64_t B, int64_t T,
                        int64_t H, int64_t Hkv, int64_t D);

// ---- the Llama ops (reference_llama_ops.cpp) ----
// RMSNorm: out (N,C) = inp * rstd * weight, rstd (N) = 1 / sqrt(mean(inp^2) + eps).
template <class F>
void rmsnorm_forward(F* out, F* rstd, const F* inp, const F* weight, int64_t N, int64_t C, F eps);
// dinp (N,C) overwritten or added per dinp_mode; dweight (C) +=.
template <class F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight, const F* rstd,
                      int64_t N, int64_t C, Accumulate dinp_mode);
// RMSNorm of each q and k head of rows of (H + 2*Hkv)*D; rstd (rows, H + Hkv); v copied.
template <class F>
void head_rmsnorm_forward(F* out, F* rstd, const F* inp, const F* q_weight, const F* k_weight, int64_t rows,
                          int64_t H, int64_t Hkv, int64_t D, F eps);
template <class F>
void head_rmsnorm_backward(F* dinp, F* dq_weight, F* dk_weight, const F* dout, const F* inp, const F* q_weight,
                           const F* k_weight, const F* rstd, int64_t rows, int64_t H, int64_t Hkv, int64_t D);
// Rotate-half rotary embedding of the q and k heads of (B,T,(H+2*Hkv)*D), angle
// float(pos_offset + t) * inv_freq[i] (in f32, as the kernels); direction -1 is the transpose.
template <class F>
void rope(F* out, const F* inp, const float* inv_freq, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
          int64_t pos_offset, int direction);
// out (N,F) = silu(gate) * up for rows [gate | up] of inp (N,2F); backward into dinp (N,2F).
template <class F>
void swiglu_forward(F* out, const F* inp, int64_t N, int64_t Fw);
template <class F>
void swiglu_backward(F* dinp, const F* inp, const F* dout, int64_t N, int64_t Fw);

// GELU, tanh approximation.
template <class F>
F gelu(F x);
template <class F>
F gelu_grad(F x);
template <class F>
void gelu_forward(F* out, const F* inp, int64_t n);
template <class F>
void gelu_backward(F* dinp, const F* inp, const F* dout, int64_t n);

template <class F>
void add(F* out, const F* a, const F* b, int64_t n);
template <class F>
void scale(F* x, F alpha, int64_t n);
template <class F>
void fill(F* x, F value, int64_t n);
template <class F>
void cast(F* dst, const F* src, int64_t n);
template <class F>
double sum_squares(const F* x, int64_t n);

// Cross-entropy passes; logits (N,Vl) with the first valid_cols columns real; targets (N)
// global ids.
template <class F>
void xent_max(F* maxes, const F* logits, int64_t N, int64_t Vl, int64_t valid_cols);
template <class F>
void xent_sumexp(F* sumexp, F* target_logit, const F* logits, const F* maxes,
                 const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                 int64_t valid_cols);
template <class F>
void xent_loss(F* losses, const F* maxes, const F* sumexp, const F* target_logit, int64_t N);
template <class F>
void xent_backward(F* dlogits, const F* logits, const F* maxes, const F* sumexp,
                   const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                   int64_t valid_cols, F dloss);

// AdamW (PyTorch's formulation): p *= 1 - lr*wd; m, v moments of grad*grad_scale;
// p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
// param_copy (n) or nullptr receives the updated parameters.
template <class F>
void adamw(F* param, const F* grad, F* m, F* v, F* param_copy, int64_t n, const AdamWStep& h);

}  // namespace trainer::ref
