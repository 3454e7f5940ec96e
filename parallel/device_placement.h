// Which physical device each rank of a communicator uses, and the check that no two ranks on one
// host share one: NCCL refuses that with a bare "invalid usage" from ncclCommInitRank, which
// names neither the ranks nor the fix. Here without CUDA, so the check runs in CPU tests;
// parallel/cuda/nccl_comm.cpp fills the placements (host name, the GPU's UUID) and gathers them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainer {

// Fixed-size, so that MPI can gather it as bytes.
struct DevicePlacement {
  std::array<char, 64> host{};  // NUL-terminated (truncated) host name
  std::array<uint8_t, 16> device_uuid{};
  int32_t device_index = -1;  // as this rank's process sees it (CUDA_VISIBLE_DEVICES applied)
  int32_t devices_visible = 0;
  int32_t world_rank = -1;
};

DevicePlacement make_device_placement(const std::string& host, const std::array<uint8_t, 16>& uuid,
                                      int device_index, int devices_visible, int world_rank);

// The first two ranks (lowest pair) on one host with the same device, if any.
std::optional<std::pair<int, int>> find_shared_device(const std::vector<DevicePlacement>& ranks);

// "world ranks 0 and 1 (data group) both use one GPU on host h ...": the ConfigError text for a
// pair find_shared_device found.
std::string shared_device_message(const std::vector<DevicePlacement>& ranks, std::pair<int, int> pair,
                                  const std::string& group);

}  // namespace trainer
