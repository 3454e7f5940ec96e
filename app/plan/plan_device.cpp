// Device figures for `trainer plan` (see plan_device.h for the sources).
#include "app/plan/plan_device.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "app/plan/flops.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "kernels/tensor.h"

namespace trainer {

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

}  // namespace

PlanDevice parse_plan_device(const std::string& name) {
  if (std::optional<PlanDevice> device = enum_from_name(kPlanDeviceNames, name)) return *device;
  throw ConfigError("--device: '" + name + "' is not a device type plan knows; valid: " +
                    enum_choices(kPlanDeviceNames));
}

int64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  TRAINER_CHECK(pages > 0 && page > 0, "sysconf(_SC_PHYS_PAGES) failed");
  return int64_t(pages) * int64_t(page);
}

DeviceSpec device_spec(PlanDevice device, int world) {
  DeviceSpec d;
  d.kind = device;
  switch (device) {
    case PlanDevice::cpu:
      // One node: the ranks share this machine's RAM and talk through MPI's shared memory.
      // Bandwidths are order-of-magnitude figures for one core; the runtime figure is the peak
      // RSS of `trainer train` on a 1-layer, d_model 8 model minus its buffers (binary,
      // OpenMP, OpenBLAS and Open MPI initialised), measured on this machine type.
      d.name = "cpu";
      d.memory_bytes = host_memory_bytes() / std::max(1, world);
      d.hbm_bytes_per_s = 10e9;
      d.intra_bytes_per_s = d.inter_bytes_per_s = 5e9;
      d.intra_latency_s = d.inter_latency_s = 2e-6;
      d.ranks_per_node = std::max(1, world);
      d.runtime_bytes = 20 * kMiB;
      break;
    case PlanDevice::a100:
      d.name = "A100";
      d.memory_bytes = 81920 * kMiB;
      d.intra_bytes_per_s = 300e9;
      d.inter_bytes_per_s = 25e9;
      break;
    case PlanDevice::h100:
      d.name = "H100";
      d.memory_bytes = 81559 * kMiB;
      d.intra_bytes_per_s = 450e9;
      d.inter_bytes_per_s = 50e9;
      break;
    case PlanDevice::h200:
      d.name = "H200";
      d.memory_bytes = 143771 * kMiB;
      d.intra_bytes_per_s = 450e9;
      d.inter_bytes_per_s = 50e9;
      break;
  }
  if (device != PlanDevice::cpu) {
    d.gpu = true;
    d.hbm_bytes_per_s = device_memory_bandwidth(Device::cuda, d.name);  // the data sheet's, as bench's
    d.ranks_per_node = 8;
    d.intra_latency_s = 3e-6;
    d.inter_latency_s = 8e-6;
    // CUDA context, cuBLASLt workspace, NCCL channel buffers and allocator slack.
    d.runtime_bytes = 2048 * kMiB;
  }
  return d;
}

}  // namespace trainer
