// FLOPs, MFU and the device ceilings they are read against. Training FLOPs per token = 6 N + 6 L T C, the formula llm.c and most papers
// use: N counts every parameter except the position table (with the padded vocabulary rows,
// which the head's matrix product does compute); the second term is attention's QK^T and AV,
// forward and backward, with causal masking ignored.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/base/enum_names.h"
#include "kernels/tensor.h"
#include "model/gpt_config.h"

namespace trainer {

double flops_per_token(const GptConfig& config, int seq_len);

// Which peak an MFU divides by. The CUDA backend's fp32 GEMMs are strict fp32 (no TF32), so an
// fp32 run on a GPU divides by the plain fp32 rate, a bf16 run by the dense (not "with
// sparsity") bf16 tensor-core rate.
enum class PeakKind : uint8_t { bf16_dense, fp32, cpu_fp32, recipe, unknown };
// How reports name each kind (bench's "peak_kind", the MFU line).
inline constexpr EnumName<PeakKind> kPeakKindNames[] = {
    {PeakKind::bf16_dense, "bf16 dense"},
    {PeakKind::fp32, "fp32"},
    {PeakKind::cpu_fp32, "cpu fp32 (0.25 TFLOP/s per thread)"},
    {PeakKind::recipe, "train.peak_tflops"},
    {PeakKind::unknown, "unknown peak"}};
inline const char* peak_kind_name(PeakKind kind) { return enum_name(kPeakKindNames, kind); }

struct DevicePeak {
  double flops = 0;  // per second; 0 when unknown (no MFU is reported then)
  PeakKind kind = PeakKind::unknown;
  std::string device;  // the device name it was looked up by
  std::string describe() const;  // "989 TFLOP/s bf16 dense (NVIDIA H200)" / "unknown peak for ..."
};

// The peak FLOP/s of one rank's device: train.peak_tflops when set (> 0); on a GPU the data
// sheet's figure looked up by the driver's device name ("NVIDIA H200", "NVIDIA A100-SXM4-80GB",
// "NVIDIA H100 PCIe"; the planner passes "H100") and the activation dtype (bf16: dense bf16,
// f32: fp32), and for a GPU not in the table PeakKind::unknown, never a guess; on the CPU 0.25
// TFLOP/s per OpenMP thread of the rank (the fp32 sgemm rate of one AVX-512 thread with
// OpenBLAS's SkylakeX kernels on the machines these numbers were measured on).
DevicePeak device_peak(Device device, const std::string& device_name, DType act_dtype, double recipe_peak_tflops);

// The device memory bandwidth (bytes/s) of a GPU from its data sheet, looked up by the driver's
// name as device_peak does ("NVIDIA A100-SXM4-40GB" 1.555 TB/s, "NVIDIA H200" 4.8); 0 on the CPU
// and for a GPU the table does not know, never a guess.
double device_memory_bandwidth(Device device, const std::string& device_name);

// An op's roofline floor: the time the device's two ceilings allow what it moves and computes,
// max(bytes / bandwidth, FLOPs / peak). `trainer plan --ops` predicts with it and `bench
// --profile` reads each op's measured time against it.
struct Roofline {
  double bytes_per_s = 0;  // 0: unknown
  double flops_per_s = 0;  // 0: unknown
  bool known() const { return bytes_per_s > 0 && flops_per_s > 0; }
  double memory_s(double bytes) const { return bytes / bytes_per_s; }
  double compute_s(double flops) const { return flops / flops_per_s; }
  double floor_s(double bytes, double flops) const { return std::max(memory_s(bytes), compute_s(flops)); }
  bool compute_bound(double bytes, double flops) const { return compute_s(flops) > memory_s(bytes); }
};

// MFU as a fraction, or a negative value when the peak is unknown.
double mfu_of(double flops_per_s, const DevicePeak& peak);

}  // namespace trainer
