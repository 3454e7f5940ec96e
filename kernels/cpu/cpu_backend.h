// The CPU backend: fp32 activations and weights, OpenMP for element-wise and reduction ops,
// OpenBLAS (its OpenMP build) sgemm for matrix products. Every op has a plain reference loop
// in reference_<op>.h that the tests compare against.
//
// Invariants:
// - act dtype is f32, so the front doors (backend.h) reject bf16 tensors; tokens/targets are i32.
// - Deterministic: results are bit-identical for any OpenMP thread count (see cpu_ops.h for
//   how each reduction is split). No floating-point atomics.
// - raw_alloc returns 64-byte aligned host memory, not zero-initialised; allocated and peak
//   bytes are tracked per backend.
// - Construction sets flush-to-zero and denormals-are-zero in MXCSR, which is per thread: on
//   the calling thread and on every thread of the OpenMP pool (threads created later inherit
//   the creating thread's MXCSR). Denormals arise routinely in training (tiny gradients, Adam
//   moments decaying towards zero) and cost ~100 cycles each on x86; on this kind of machine
//   they made PyTorch's training step 4x slower (shared/REFERENCE.md). Flushing them changes
//   results only below 1.2e-38.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace trainer {

std::unique_ptr<Backend> make_cpu_backend();

// Sets FTZ/DAZ on the calling thread and on every thread of the current OpenMP pool.
void cpu_enable_flush_denormals();

}  // namespace trainer
