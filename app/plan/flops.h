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

// Which figures a roofline floor is read against: the data sheet's (also MFU's denominator), or
// the ceilings measured on the device itself, which are what a kernel can reach: a
// device-to-device copy (bytes read + written) and an 8192^3 bf16 GEMM on random data. Only two
// GPUs in bf16 have measured figures on record, each from the machines lent to this project: the
// NVIDIA H200 (4.3 TB/s and 790 TFLOP/s, 2026-10/11) and the H100 SXM, "NVIDIA H100 80GB HBM3"
// (3.0 TB/s and 798 TFLOP/s, 2026-11-13).
enum class Ceilings : uint8_t { datasheet, measured };
inline constexpr EnumName<Ceilings> kCeilingsNames[] = {{Ceilings::datasheet, "datasheet"},
                                                        {Ceilings::measured, "measured"}};

// A roofline and where each of its two figures came from: "data sheet", "measured",
// "--bandwidth", "train.peak_tflops" or the CPU's estimate; "" where the figure is unknown (0).
struct RooflineChoice {
  Roofline roof;
  std::string bandwidth_source;
  std::string peak_source;
  // "4300 GB/s (measured) and 790 TFLOP/s (measured)"
  std::string describe() const;
};

// The roofline of one rank's device. An explicit figure wins over a table's: bandwidth_override
// (bytes/s, --bandwidth; 0 = none) and recipe_peak_tflops (train.peak_tflops; 0 = none). Then
// `ceilings` picks the table; Ceilings::measured throws a ConfigError naming the device where a
// figure it needs is not on record, rather than falling back to the data sheet's.
RooflineChoice roofline_for(Device device, const std::string& device_name, DType act_dtype, Ceilings ceilings,
                            double bandwidth_override, double recipe_peak_tflops);

// MFU as a fraction, or a negative value when the peak is unknown.
double mfu_of(double flops_per_s, const DevicePeak& peak);

}  // namespace trainer
