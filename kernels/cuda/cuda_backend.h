// The CUDA backend factory and GPU discovery, usable from host-only code (no CUDA headers).
//
// Precision: with Precision::bf16 the activations, their gradients and the compute copy of the
// weights are bf16; parameter gradients, fp32 master weights, Adam moments and statistics stay
// f32, and every matmul and reduction accumulates in f32. bf16 needs no loss scaling: it keeps
// fp32's 8-bit exponent (range ~1e-38 to ~3e38), so small gradients do not underflow the way
// they do in fp16 (5-bit exponent, smallest normal ~6e-5); only mantissa precision is lost,
// which f32 accumulation and f32 master weights absorb. Precision::fp32 keeps everything f32
// (strict fp32 GEMMs, no TF32).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/backend.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace trainer {

// Number of usable GPUs; any error from the driver or runtime counts as none.
int cuda_device_count();
// The marketing name of GPU `device` ("NVIDIA H100 80GB HBM3"); "" on any error.
std::string cuda_device_name(int device);
// Builds the CUDA backend on GPU (options.local_rank % device count). attention: cudnn runs
// training attention through cuDNN's fused graphs (cudnn_attention.h); ConfigError when the build
// has no cuDNN, the loaded cuDNN is older than 9.0, or the precision is not bf16.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

// The compute stream and device ordinal of a backend made by make_cuda_backend (for NcclComm,
// which orders its communication stream against the compute stream with events). Internal
// error for any other backend.
CUstream_st* cuda_backend_stream(Backend& backend);
int cuda_backend_device(Backend& backend);
// How many matrix products of that backend ran with each cuBLASLt epilogue (cuda_matmul.h).
std::map<std::string, int64_t> cuda_backend_matmul_epilogues(Backend& backend);

}  // namespace trainer
