// The parity tables every runner runs whole, listed once: X(the table's function, its name in
// the test names). The runners (tests/kernels/test_parity_tables.cpp: CPU against CPU;
// tests/kernels/cuda/test_cuda_parity.cpp: CUDA; tests/kernels/cuda_emu/test_cuda_emu.cpp: the
// emulator) each expand it into one TEST_CASE per table. matmul's and attention's tables are
// not listed: each runner runs them its own way (the emulator runs matmul's under cuBLASLt's
// refusals in test_cublaslt_emu.cpp, and attention's in three parts); ring attention's block
// ops are (attention blocks).
#pragma once

#include "tests/kernels/cuda/parity_attention_cases.h"
#include "tests/kernels/cuda/parity_cases.h"
#include "tests/kernels/cuda/parity_rmsnorm_cases.h"
#include "tests/kernels/cuda/parity_rope_cases.h"
#include "tests/kernels/cuda/parity_swiglu_cases.h"

#define TRAINER_PARITY_TABLES(X)                   \
  X(encoder_parity_cases, "encoder")               \
  X(layernorm_parity_cases, "layernorm")           \
  X(elementwise_parity_cases, "element-wise")      \
  X(bias_backward_parity_cases, "bias_backward")   \
  X(xent_parity_cases, "cross-entropy")            \
  X(adamw_parity_cases, "adamw")                   \
  X(rmsnorm_parity_cases, "rmsnorm")               \
  X(head_rmsnorm_parity_cases, "head rmsnorm")     \
  X(rope_parity_cases, "rope")                     \
  X(swiglu_parity_cases, "swiglu")                \
  X(attention_block_parity_cases, "attention blocks")
