// Control-group memory limits (see cgroup_memory.h).
#include "kernels/cpu/cgroup_memory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace trainer {
namespace {

// Limits at or above this mean "no limit" (cgroup v1 reports 2^63 less a page).
constexpr int64_t kNoLimit = int64_t(1) << 62;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first integer of a file; -1 when missing, unreadable or not a number ("max").
int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  long long v = -1;
  if (!(in >> v) || v < 0) return -1;
  return int64_t(v);
}

// The value of `key` in a memory.stat file; 0 when absent.
int64_t stat_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  long long v = 0;
  while (in >> k >> v)
    if (k == key) return int64_t(std::max(0LL, v));
  return 0;
}

enum class CgroupVersion : uint8_t { v1, v2 };

struct Hierarchy {
  CgroupVersion version;
  std::string mount;  // where the hierarchy is mounted (below root)
  std::string path;   // this process's cgroup within it
};

// The memory hierarchies: v1 ones mounted with the memory controller, and the v2 one.
std::vector<Hierarchy> memory_hierarchies(const std::string& self_cgroup, const std::string& mounts) {
  std::string v1_path, v2_path;
  bool have_v1 = false, have_v2 = false;
  std::istringstream lines(self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      v2_path = path;
      have_v2 = true;
    }
    std::istringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ','))
      if (name == "memory") {
        v1_path = path;
        have_v1 = true;
      }
  }
  std::vector<Hierarchy> out;
  std::istringstream mount_lines(mounts);
  while (std::getline(mount_lines, line)) {
    std::istringstream f(line);
    std::string device, dir, type, options;
    if (!(f >> device >> dir >> type >> options)) continue;
    if (type == "cgroup2" && have_v2) out.push_back({CgroupVersion::v2, dir, v2_path});
    if (type == "cgroup" && have_v1 && ("," + options + ",").find(",memory,") != std::string::npos)
      out.push_back({CgroupVersion::v1, dir, v1_path});
  }
  return out;
}

// Limit and usage at one level; limit -1 when this level sets none.
struct Level {
  int64_t limit = -1, used = 0;
};

Level read_level(CgroupVersion v, const std::string& dir) {
  Level l;
  const int64_t limit = read_number(dir + (v == CgroupVersion::v1 ? "/memory.limit_in_bytes" : "/memory.max"));
  if (limit < 0 || limit >= kNoLimit) return l;
  const int64_t usage = read_number(dir + (v == CgroupVersion::v1 ? "/memory.usage_in_bytes" : "/memory.current"));
  const int64_t cache =
      stat_value(dir + "/memory.stat", v == CgroupVersion::v1 ? "total_inactive_file" : "inactive_file");
  l.limit = limit;
  l.used = std::max<int64_t>(0, usage - cache);
  return l;
}

}  // namespace

CgroupMemory cgroup_memory_from(const std::string& self_cgroup, const std::string& mounts, const std::string& root) {
  CgroupMemory best;
  for (const Hierarchy& h : memory_hierarchies(self_cgroup, mounts)) {
    const std::string top = root + h.mount;
    // Under a cgroup namespace or a bind mount the process's path may not exist below the
    // mount; the mount point itself is then the process's cgroup.
    std::error_code ec;
    std::string rel = h.path == "/" ? "" : h.path;
    if (!rel.empty() && !std::filesystem::is_directory(top + rel, ec)) rel.clear();
    while (true) {
      const Level l = read_level(h.version, top + rel);
      if (l.limit >= 0) {
        const int64_t available = std::max<int64_t>(0, l.limit - l.used);
        if (best.available_bytes < 0 || available < best.available_bytes) {
          best.available_bytes = available;
          best.limit_bytes = l.limit;
          best.where = top + rel;
        }
      }
      if (rel.empty()) break;
      const size_t slash = rel.rfind('/');
      rel = slash == std::string::npos || slash == 0 ? "" : rel.substr(0, slash);
    }
  }
  return best;
}

CgroupMemory cgroup_memory() {
  return cgroup_memory_from(read_text("/proc/self/cgroup"), read_text("/proc/self/mounts"), "");
}

}  // namespace trainer
