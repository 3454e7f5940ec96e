// The one list of Backend ops. TRAINER_OPS(X) calls X(Op, Result, shape) once per op; each
// op's line sits under its struct in the backend_*_ops.h header that defines it, and this file
// strings those headers' lists together. Whatever must name every op is expanded from it:
// Backend::run and the virtual compute() (backend.h), the front doors (backend_ops.cpp), the
// declarations of the contract checks (op_checks.h), the profiler's key per op
// (op_profile_keys.cpp), MetaBackend's no-ops, CpuBackend's and CudaBackend's compute() and
// the entry points they call, cpu::run and cuda::run (cpu_ops.h, cuda_ops.h), and the check
// that the contract table (tests/kernels/contract_cases.h) has a valid call of every op.
// - Op: the op's struct (its arguments; kName is its name in messages and the profile).
// - Result: what run(op) returns: void, or double for an op that reads a value back to the
//   host (which synchronizes, and may not be captured in a graph).
// - shape: the text bench --profile files a call under, next to its name; an expression of
//   `op` evaluated only in op_profile_keys.cpp, whose shape_of, heads_of and matmul_shape it
//   may use. It tells the calls worth telling apart apart (a matmul's products, each
//   operand shape), or names one row for calls that are not ("all parameters").
// A new op is a struct and a line in its header's list; a new header also adds its list here.
#pragma once

#include "kernels/backend_adamw_ops.h"
#include "kernels/backend_attention_block_ops.h"
#include "kernels/backend_attention_ops.h"
#include "kernels/backend_elementwise_ops.h"
#include "kernels/backend_encoder_ops.h"
#include "kernels/backend_fused_ops.h"
#include "kernels/backend_generation_ops.h"
#include "kernels/backend_init_ops.h"
#include "kernels/backend_layernorm_ops.h"
#include "kernels/backend_matmul_ops.h"
#include "kernels/backend_multi_tensor_ops.h"
#include "kernels/backend_rmsnorm_ops.h"
#include "kernels/backend_rope_ops.h"
#include "kernels/backend_swiglu_ops.h"
#include "kernels/backend_xent_ops.h"

#define TRAINER_OPS(X)          \
  TRAINER_ENCODER_OPS(X)        \
  TRAINER_LAYERNORM_OPS(X)      \
  TRAINER_MATMUL_OPS(X)         \
  TRAINER_ATTENTION_OPS(X)      \
  TRAINER_ATTENTION_BLOCK_OPS(X) \
  TRAINER_GENERATION_OPS(X)     \
  TRAINER_RMSNORM_OPS(X)        \
  TRAINER_ROPE_OPS(X)           \
  TRAINER_SWIGLU_OPS(X)         \
  TRAINER_ELEMENTWISE_OPS(X)    \
  TRAINER_INIT_OPS(X)           \
  TRAINER_XENT_OPS(X)           \
  TRAINER_FUSED_OPS(X)          \
  TRAINER_ADAMW_OPS(X)          \
  TRAINER_MULTI_TENSOR_OPS(X)
