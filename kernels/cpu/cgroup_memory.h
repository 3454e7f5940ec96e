// The memory a control group lets this process use: a container, a Slurm job step or a
// systemd unit caps memory below what /proc/meminfo's MemAvailable shows, and a run that
// passes the MemAvailable test is then killed by the OOM killer mid-start. Both cgroup
// versions are read: v1 (memory.limit_in_bytes, memory.usage_in_bytes, total_inactive_file)
// and v2 (memory.max, memory.current, inactive_file). Every level from the process's own
// cgroup up to the hierarchy's mount point counts (an ancestor's limit applies to all below
// it); the tightest level wins. File cache that can be dropped (inactive file pages) is not
// counted as used, as the kernel reclaims it before killing.
#pragma once

#include <cstdint>
#include <string>

namespace trainer {

struct CgroupMemory {
  int64_t limit_bytes = -1;      // the tightest level's limit; -1: no limit anywhere
  int64_t available_bytes = -1;  // that level's limit less its usage; -1: no limit
  std::string where;             // the tightest level's directory ("" without a limit)
};

// This process's limit, from /proc/self/cgroup and /proc/self/mounts.
CgroupMemory cgroup_memory();

// The same from given texts of /proc/self/cgroup and /proc/self/mounts, with every path
// the mounts name read below root (tests pass a scratch directory; "" reads the real ones).
CgroupMemory cgroup_memory_from(const std::string& self_cgroup, const std::string& mounts, const std::string& root);

}  // namespace trainer
