// The shared-device check that NcclComm runs before ncclCommInitRank (parallel/device_placement.h):
// two ranks on one host with one GPU UUID are found and named; other hosts, other GPUs and the
// same device index with another UUID (per-rank CUDA_VISIBLE_DEVICES) are not a conflict.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "parallel/device_placement.h"

namespace trainer {
namespace {

std::array<uint8_t, 16> uuid(uint8_t n) {
  std::array<uint8_t, 16> u{};
  u[0] = 0xab;
  u[15] = n;
  return u;
}

TEST_CASE("device placement: two ranks of one host on one GPU are found and named") {
  // One node with 2 GPUs, 3 ranks: the third wrapped around to GPU 0 (local_rank % count).
  const std::vector<DevicePlacement> ranks = {make_device_placement("node-a", uuid(0), 0, 2, 4),
                                              make_device_placement("node-a", uuid(1), 1, 2, 5),
                                              make_device_placement("node-a", uuid(0), 0, 2, 6)};
  const auto pair = find_shared_device(ranks);
  REQUIRE(pair);
  CHECK(pair->first == 0);
  CHECK(pair->second == 2);
  const std::string text = shared_device_message(ranks, *pair, "data");
  CHECK(text.rfind("world ranks 4 and 6 (data group) both use one GPU on host node-a (device 0 and 0 as each sees it; "
                   "2 GPUs visible)", 0) == 0);
  CHECK(text.find("CUDA_VISIBLE_DEVICES") != std::string::npos);
  CHECK(text.find("--ntasks-per-node") != std::string::npos);
}

TEST_CASE("device placement: other hosts, other GPUs and per-rank visible devices do not conflict") {
  // Each rank sees only its own GPU as device 0: the UUIDs tell them apart.
  CHECK_FALSE(find_shared_device({make_device_placement("node-a", uuid(0), 0, 1, 0),
                                  make_device_placement("node-a", uuid(1), 0, 1, 1)}));
  // The same GPU model and index on two hosts.
  CHECK_FALSE(find_shared_device({make_device_placement("node-a", uuid(0), 0, 8, 0),
                                  make_device_placement("node-b", uuid(0), 0, 8, 8)}));
  CHECK_FALSE(find_shared_device({make_device_placement("node-a", uuid(0), 0, 1, 0)}));
  CHECK_FALSE(find_shared_device({}));
  // A host name longer than the field is cut the same way on every rank.
  const std::string long_host(100, 'h');
  CHECK(find_shared_device({make_device_placement(long_host, uuid(3), 0, 1, 0),
                            make_device_placement(long_host, uuid(3), 0, 1, 1)}));
  CHECK(std::string(make_device_placement(long_host, uuid(3), 0, 1, 0).host.data()).size() == 63);
}

}  // namespace
}  // namespace trainer
