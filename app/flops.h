// FLOPs and MFU. Training FLOPs per token = 6 N + 6 L T C, the formula llm.c and most papers
// use: N counts every parameter except the position table (with the padded vocabulary rows,
// which the head's matrix product does compute); the second term is attention's QK^T and AV,
// forward and backward, with causal masking ignored.
#pragma once

#include <string>

#include "model/gpt_config.h"

namespace trainer {

double flops_per_token(const GptConfig& config, int seq_len);

// Dense peak FLOP/s of one rank's device: the recipe's train.peak_tflops when set, else a
// built-in table by device name (bf16 tensor-core peaks: A100 312, H100/H200 989 TFLOP/s; for
// fp32 the TF32 peaks), and on the CPU 0.25 TFLOP/s per OpenMP thread of the rank: the fp32
// sgemm rate of one AVX-512 thread on this machine type with OpenBLAS's SkylakeX kernels.
double peak_flops(const std::string& backend_name, bool bf16, double recipe_peak_tflops);

}  // namespace trainer
