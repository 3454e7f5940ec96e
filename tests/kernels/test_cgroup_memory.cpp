// cgroup_memory_from (kernels/cpu/cgroup_memory.h): the tightest memory limit over the
// process's cgroup and its ancestors, for cgroup v1 and v2, read from a scratch tree that
// stands in for /sys/fs/cgroup.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/cpu/cgroup_memory.h"
#include "tests/support/test_util.h"

namespace trainer {
namespace {

namespace fs = std::filesystem;

void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

constexpr int64_t MiB = int64_t(1) << 20;
const std::string kV1Mounts = "cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,relatime,memory 0 0\n"
                              "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n";
const std::string kV2Mounts = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,relatime 0 0\n";

TEST_CASE("cgroup memory: v1 and v2 limits, ancestors, file cache and the absence of a limit") {
  const std::string root = testing::scratch_dir("cgroup_memory");
  const std::string v1 = root + "/v1/sys/fs/cgroup/memory", v2 = root + "/v2/sys/fs/cgroup";
  // v1: the job's cgroup limits to 512 MiB and uses 300 MiB, 100 MiB of it inactive file cache;
  // its parent has no limit (2^63 less a page).
  put(v1 + "/memory.limit_in_bytes", "9223372036854771712\n");
  put(v1 + "/slurm/memory.limit_in_bytes", "9223372036854771712\n");
  put(v1 + "/slurm/job_7/memory.limit_in_bytes", std::to_string(512 * MiB) + "\n");
  put(v1 + "/slurm/job_7/memory.usage_in_bytes", std::to_string(300 * MiB) + "\n");
  put(v1 + "/slurm/job_7/memory.stat", "cache 104857600\ntotal_inactive_file " + std::to_string(100 * MiB) + "\n");
  // v2: a leaf without a limit under a parent limited to 1 GiB with 900 MiB in use, under a
  // grandparent limited to 2 GiB with 100 MiB in use: the parent is the tightest.
  put(v2 + "/user.slice/memory.max", std::to_string(2048 * MiB) + "\n");
  put(v2 + "/user.slice/memory.current", std::to_string(100 * MiB) + "\n");
  put(v2 + "/user.slice/app/memory.max", std::to_string(1024 * MiB) + "\n");
  put(v2 + "/user.slice/app/memory.current", std::to_string(900 * MiB) + "\n");
  put(v2 + "/user.slice/app/memory.stat", "anon 1\ninactive_file 0\n");
  put(v2 + "/user.slice/app/run/memory.max", "max\n");
  put(v2 + "/user.slice/app/run/memory.current", std::to_string(10 * MiB) + "\n");
  put(v2 + "/memory.max", "max\n");

  struct Row {
    const char* what;
    std::string self_cgroup, mounts, root;
    int64_t limit, available;
    std::string where;
  };
  const std::vector<Row> rows = {
      {"v1, the job's own limit less its usage, cache not counted", "4:memory:/slurm/job_7\n3:cpu:/\n0::/\n",
       kV1Mounts, root + "/v1", 512 * MiB, 312 * MiB, v1 + "/slurm/job_7"},
      {"v1, no limit anywhere", "4:memory:/slurm\n", kV1Mounts, root + "/v1", -1, -1, ""},
      {"v1 under a cgroup namespace: the path is missing below the mount, the mount is the cgroup",
       "4:memory:/docker/abc\n", kV1Mounts, root + "/v1", -1, -1, ""},
      {"v2, an ancestor's limit is the tightest", "0::/user.slice/app/run\n", kV2Mounts, root + "/v2", 1024 * MiB,
       124 * MiB, v2 + "/user.slice/app"},
      {"v2, no limit at the root", "0::/\n", kV2Mounts, root + "/v2", -1, -1, ""},
      {"a v1 memory line but only a v2 mount", "4:memory:/slurm/job_7\n", kV2Mounts, root + "/v1", -1, -1, ""},
      {"no cgroup lines at all", "", kV1Mounts + kV2Mounts, root + "/v1", -1, -1, ""},
      {"both versions: the tighter wins", "4:memory:/slurm/job_7\n0::/user.slice/app/run\n",
       "cgroup /v1/sys/fs/cgroup/memory cgroup rw,memory 0 0\ncgroup2 /v2/sys/fs/cgroup cgroup2 rw 0 0\n", root,
       1024 * MiB, 124 * MiB, v2 + "/user.slice/app"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const CgroupMemory m = cgroup_memory_from(r.self_cgroup, r.mounts, r.root);
    CHECK(m.limit_bytes == r.limit);
    CHECK(m.available_bytes == r.available);
    CHECK(m.where == r.where);
  }
}

TEST_CASE("cgroup memory: usage above the limit leaves nothing available, not a negative figure") {
  const std::string root = testing::scratch_dir("cgroup_memory_over");
  put(root + "/sys/fs/cgroup/memory.max", std::to_string(64 * MiB) + "\n");
  put(root + "/sys/fs/cgroup/memory.current", std::to_string(80 * MiB) + "\n");
  const CgroupMemory m = cgroup_memory_from("0::/\n", kV2Mounts, root);
  CHECK(m.limit_bytes == 64 * MiB);
  CHECK(m.available_bytes == 0);
}

}  // namespace
}  // namespace trainer
