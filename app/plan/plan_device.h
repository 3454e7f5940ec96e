// Hardware figures that `trainer plan` assumes for a device type: memory per rank, peak
// FLOP/s (through flops.h), the fraction of peak that compute reaches (MFU), memory and link
// bandwidths, and the fixed memory a process needs outside the model. They are documented
// assumptions for an analytical model, not measurements of any particular cluster; every
// number is printed by `trainer plan` and the ones that matter most are overridable
// (--memory, --mfu, train.peak_tflops).
//
// Sources: memory as nvidia-smi reports it (A100-SXM4-80GB 81,920 MiB, H100 SXM 81,559 MiB,
// H200 143,771 MiB); dense bf16 peaks from REFERENCE.md; HBM bandwidth from the data sheets through flops.h
// (A100 2.04 TB/s, H100 SXM 3.35 TB/s, H200 4.8 TB/s); NVLink per GPU and direction (A100
// NVLink 3: 300 GB/s, H100/H200 NVLink 4: 450 GB/s); one InfiniBand HCA per GPU (A100 nodes:
// HDR 200 Gb/s = 25 GB/s, H100/H200 nodes: NDR 400 Gb/s = 50 GB/s); 8 GPUs per node.
// MFU 50%: what llm.c (~56% for 124M on A100) and Megatron-LM (41-52%) reach.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/base/enum_names.h"
#include "kernels/tensor.h"

namespace trainer {

enum class PlanDevice : uint8_t { cpu, a100, h100, h200 };
// plan's --device names, in the order messages list them.
inline constexpr EnumName<PlanDevice> kPlanDeviceNames[] = {
    {PlanDevice::a100, "a100"}, {PlanDevice::h100, "h100"}, {PlanDevice::h200, "h200"}, {PlanDevice::cpu, "cpu"}};
inline const char* plan_device_name(PlanDevice device) { return enum_name(kPlanDeviceNames, device); }

struct DeviceSpec {
  PlanDevice kind = PlanDevice::cpu;
  std::string name;               // "cpu", "A100", ... (the key of flops.h's peak table)
  bool gpu = false;
  int64_t memory_bytes = 0;       // per rank
  double mfu = 0.5;               // assumed fraction of peak reached by the FLOPs executed
  double hbm_bytes_per_s = 0;     // device memory bandwidth (memory-bound optimizer step)
  double intra_bytes_per_s = 0;   // per rank and direction, between ranks of one node
  double inter_bytes_per_s = 0;   // per rank and direction, between nodes
  double intra_latency_s = 0;     // per step of a ring collective or per message
  double inter_latency_s = 0;
  int ranks_per_node = 8;
  int64_t runtime_bytes = 0;      // per process, outside the model's buffers
  // The backend device a run on this device type has.
  Device device() const { return gpu ? Device::cuda : Device::cpu; }
};

// "a100" | "h100" | "h200" | "cpu"; anything else is a ConfigError naming the valid choices.
PlanDevice parse_plan_device(const std::string& name);

// The assumed figures for `world` ranks of this device type. CPU ranks all run on this machine
// (as mpiexec starts them here): each gets an equal share of its RAM and one node holds them
// all.
DeviceSpec device_spec(PlanDevice device, int world);

// Physical memory of this machine.
int64_t host_memory_bytes();

}  // namespace trainer
