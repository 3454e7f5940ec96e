// Fast fp32 CPU kernels behind CpuBackend (internal to kernels/cpu). CpuBackend's compute(op)
// is cpu::run(op) for every op of the op list (op_list.h): each run, defined next to its
// kernel in cpu_<op>.cpp, unpacks an op the front doors (backend_ops.cpp) have checked into the
// raw pointers and sizes of the kernels declared below. Semantics are those of the op structs
// (backend.h); the reference loops (reference_<op>.h) define the same ops.
//
// Determinism: every kernel gives bit-identical results for any OpenMP thread count. Work
// is split so that each output element is produced by exactly one thread in a fixed order:
// row-wise ops parallelise over rows, reductions over rows (layernorm dweight/dbias,
// bias_backward, encoder_backward) over blocks of output columns, sum_squares adds
// fixed-size chunks whose partial sums are combined in chunk order, matmul runs one
// single-threaded sgemm per fixed output panel, attention one task per (batch, head [, query
// block]). No float atomics.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace trainer::cpu {

// Columns per task in the column-parallel reductions: 64 floats = four cache lines.
constexpr int64_t kColumnBlock = 64;

#define TRAINER_DECLARE_CPU_RUN(Op, Result, ...) Result run(const Op& op);
TRAINER_OPS(TRAINER_DECLARE_CPU_RUN)
#undef TRAINER_DECLARE_CPU_RUN

// The contract holds (the front door checked it): act is f32, so every float tensor is f32.
inline float* f32(const Tensor& t) { return t.ptr<float>(); }
inline const int32_t* i32(const Tensor& t) { return t.ptr<int32_t>(); }

// positions (B, T) or null: each token's wpe row instead of t.
void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, const int32_t* positions,
                     int64_t B, int64_t T, int64_t C, int64_t V, int64_t vocab_start);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, const int32_t* positions,
                      int64_t B, int64_t T, int64_t C, int64_t V, int64_t vocab_start);

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C, Accumulate dinp_mode);

void matmul(float* out, const float* a, const float* b, const float* bias, int64_t M, int64_t N,
            int64_t K, Transpose ta, Transpose tb, Accumulate mode, float* gelu_out);
void bias_backward(float* dbias, const float* dout, int64_t M, int64_t N);

// Hkv k/v heads shared by groups of H / Hkv query heads; qkv rows are (H + 2*Hkv)*D wide.
// doc_start (B, T) or null: row i of sequence b sees keys doc_start[b*T+i] .. i.
void attention_forward(float* out, float* lse, const float* qkv, int64_t B, int64_t T, int64_t H,
                       int64_t Hkv, int64_t D, const int32_t* doc_start);
// k_cache, v_cache (B, Hkv, Tmax, D); the new rows' positions are past .. past + T - 1.
void attention_cached(float* out, float* k_cache, float* v_cache, const float* qkv, int64_t B, int64_t T, int64_t H,
                      int64_t Hkv, int64_t D, int64_t t_max, int64_t past);
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                        const int32_t* doc_start);

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                     int64_t C, float eps);
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int64_t N, int64_t C,
                      Accumulate dinp_mode);
// qkv-shaped (rows, (H + 2*Hkv)*D): RMSNorm of each q and k head over its D features.
void head_rmsnorm_forward(float* out, float* rstd, const float* inp, const float* q_weight,
                          const float* k_weight, int64_t rows, int64_t H, int64_t Hkv, int64_t D,
                          float eps);
void head_rmsnorm_backward(float* dinp, float* dq_weight, float* dk_weight, const float* dout,
                           const float* inp, const float* q_weight, const float* k_weight,
                           const float* rstd, int64_t rows, int64_t H, int64_t Hkv, int64_t D);
// Rotary embedding of the q and k heads of (B, T, (H + 2*Hkv)*D); direction +1 rotates
// (forward), -1 applies the transposed rotation (backward). out may be inp. positions (B, T)
// or null: each row's position instead of pos_offset + t.
void rope(float* out, const float* inp, const float* inv_freq, int64_t B, int64_t T, int64_t H,
          int64_t Hkv, int64_t D, int64_t pos_offset, const int32_t* positions, int direction);
void swiglu_forward(float* out, const float* inp, int64_t N, int64_t F);
void swiglu_backward(float* dinp, const float* inp, const float* dout, int64_t N, int64_t F);

void gelu_forward(float* out, const float* inp, int64_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n);
void add(float* out, const float* a, const float* b, int64_t n);
void scale(float* x, float alpha, int64_t n);
void fill(float* x, float value, int64_t n);
void copy(void* dst, const void* src, size_t bytes);
// bf16 (raw 16-bit patterns) from and to f32: round to nearest even, and exact.
void cast_to_bf16(uint16_t* dst, const float* src, int64_t n);
void cast_from_bf16(float* dst, const uint16_t* src, int64_t n);
double sum_squares(const float* x, int64_t n);

void xent_max(float* maxes, const float* logits, int64_t N, int64_t Vl, int64_t valid_cols);
void xent_sumexp(float* sumexp, float* target_logit, const float* logits, const float* maxes,
                 const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                 int64_t valid_cols);
void xent_loss(float* losses, const float* maxes, const float* sumexp, const float* target_logit,
               int64_t N);
void xent_backward(float* dlogits, const float* logits, const float* maxes, const float* sumexp,
                   const int32_t* targets, int64_t N, int64_t Vl, int64_t vocab_start,
                   int64_t valid_cols, float dloss);

// xent_max, xent_sumexp, xent_loss and (XentGrad::in_place) xent_backward into the logits
// with vocab_start 0, row by row: XentFusedOp (kernels/backend_fused_ops.h).
void xent_fused(float* losses, float* logits, const int32_t* targets, int64_t N, int64_t V,
                int64_t valid_cols, XentGrad grad, float dloss);

void adamw(float* param, const float* grad, float* m, float* v, float* param_copy, int64_t n,
           const AdamWStep& h);

}  // namespace trainer::cpu
