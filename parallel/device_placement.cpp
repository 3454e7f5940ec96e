// The shared-device check (see device_placement.h).
#include "parallel/device_placement.h"

#include <algorithm>
#include <cstring>

namespace trainer {

DevicePlacement make_device_placement(const std::string& host, const std::array<uint8_t, 16>& uuid,
                                      int device_index, int devices_visible, int world_rank) {
  DevicePlacement p;
  const size_t n = std::min(host.size(), p.host.size() - 1);
  std::memcpy(p.host.data(), host.data(), n);
  p.device_uuid = uuid;
  p.device_index = device_index;
  p.devices_visible = devices_visible;
  p.world_rank = world_rank;
  return p;
}

std::optional<std::pair<int, int>> find_shared_device(const std::vector<DevicePlacement>& ranks) {
  for (size_t j = 1; j < ranks.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      if (ranks[i].host == ranks[j].host && ranks[i].device_uuid == ranks[j].device_uuid)
        return std::make_pair(int(i), int(j));
  return std::nullopt;
}

std::string shared_device_message(const std::vector<DevicePlacement>& ranks, std::pair<int, int> pair,
                                  const std::string& group) {
  const DevicePlacement& a = ranks[size_t(pair.first)];
  const DevicePlacement& b = ranks[size_t(pair.second)];
  const int visible = a.devices_visible;
  return "world ranks " + std::to_string(a.world_rank) + " and " + std::to_string(b.world_rank) + " (" + group +
         " group) both use one GPU on host " + std::string(a.host.data()) + " (device " +
         std::to_string(a.device_index) + " and " + std::to_string(b.device_index) + " as each sees it; " +
         std::to_string(visible) + " GPU" + (visible == 1 ? "" : "s") +
         " visible), which NCCL does not allow; valid: at most as many ranks per node as GPUs (mpirun -npernode, "
         "srun --ntasks-per-node), each rank with its own GPU (CUDA_VISIBLE_DEVICES), or train.device: cpu";
}

}  // namespace trainer
