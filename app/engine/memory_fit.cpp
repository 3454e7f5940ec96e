// The memory check before allocation (see memory_fit.h).
#include "app/engine/memory_fit.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "app/engine/options_from.h"
#include "app/engine/run_report.h"
#include "app/plan/plan_dry_run.h"
#include "kernels/base/errors.h"
#include "kernels/cpu/cgroup_memory.h"
#include "kernels/cpu/cpu_host_info.h"
#include "parallel/comm_text.h"

namespace trainer {
namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

// FNV-1a: ranks compare host names by a 64-bit hash carried in two int32 words.
uint64_t hash_of(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void put_u64(int32_t* words, uint64_t v) { std::memcpy(words, &v, sizeof(v)); }
uint64_t get_u64(const int32_t* words) {
  uint64_t v;
  std::memcpy(&v, words, sizeof(v));
  return v;
}

}  // namespace

MemoryOffer memory_offer(Backend& backend) {
  MemoryOffer offer;
  offer.device = backend.device();
  if (offer.device == Device::cuda) {
    const DeviceMemory m = backend.device_memory();
    offer.available = m.free_bytes;
    offer.detail = fmt::format("{} free of {} on {} (cudaMemGetInfo)", format_bytes(m.free_bytes),
                               format_bytes(m.total_bytes), backend.device_name());
    return offer;
  }
  const DeviceMemory host = host_memory();
  const CgroupMemory cg = cgroup_memory();
  offer.available = host.free_bytes;
  offer.detail = fmt::format("MemAvailable {} of {}", format_bytes(host.free_bytes), format_bytes(host.total_bytes));
  if (cg.limit_bytes >= 0) {
    offer.detail += fmt::format("; cgroup {} limits memory to {}, {} of it free", cg.where,
                                format_bytes(cg.limit_bytes), format_bytes(cg.available_bytes));
    offer.available = std::min(offer.available, cg.available_bytes);
  } else {
    offer.detail += "; no cgroup memory limit";
  }
  return offer;
}

std::string memory_fit_problem(const Recipe& recipe, const MemoryNeed& need, const MemoryOffer& offer) {
  if (need.shared_need <= offer.available) return "";
  const PlanRankMemory& p = need.plan;
  std::string who = fmt::format("rank {} (pipeline stage {}) needs {} at its peak", need.rank, need.pp_rank,
                                format_bytes(p.peak()));
  std::string parts = fmt::format(
      "params {}, master {}, grads {}, optimizer {}, comm buffers {}, activations {}", format_bytes(p.store.params),
      format_bytes(p.store.master), format_bytes(p.store.grads), format_bytes(p.store.optimizer),
      format_bytes(p.comm()), format_bytes(p.acts.activations()));
  if (offer.device == Device::cpu) parts += fmt::format(", host transients {}", format_bytes(p.peak() - p.total()));
  std::string shared;
  if (need.sharing_ranks > 1)
    shared = fmt::format("; the {} ranks on host {} need {} together", need.sharing_ranks, need.host,
                         format_bytes(need.shared_need));
  return fmt::format(
      "{}: the run does not fit in memory: by its plan {} ({}){}, but {} is available ({}). `trainer plan {}` "
      "shows the plan; use more ranks or a higher parallel.zero, parallel.tensor or parallel.pipeline, set "
      "train.recompute, lower train.micro_batch, or set train.allow_oversubscribe: true to start anyway",
      recipe.path, who, parts, shared, format_bytes(offer.available), offer.detail, recipe.path);
}

void check_memory_fits(const Recipe& recipe, const GptConfig& config, const GridCoords& coords, Backend& backend,
                       Comm& world) {
  MemoryNeed need;
  need.rank = world.rank();
  need.pp_rank = coords.pp;
  need.host = host_name();
  const int64_t act_bytes = backend.act_dtype() == DType::f32 ? 4 : 2;
  const bool cpu = backend.device() == Device::cpu;
  need.plan = plan_rank_memory(config, plan_layout_from(recipe, backend.device()), coords.pp, act_bytes,
                               cpu ? HostTransients::cpu_path : HostTransients::none);
  const MemoryOffer offer = memory_offer(backend);

  // Every rank's (host, need) to everyone; on the CPU the ranks of a host share its memory.
  const int n = world.size();
  std::vector<int32_t> mine(4), all(4 * size_t(n));
  put_u64(mine.data(), hash_of(need.host));
  put_u64(mine.data() + 2, uint64_t(need.plan.peak()));
  if (n == 1) {
    all = mine;
  } else {
    world.all_gather(make_tensor(all.data(), DType::i32, Device::cpu, {int64_t(all.size())}),
                     make_tensor(mine.data(), DType::i32, Device::cpu, {4}));
  }
  need.shared_need = need.plan.peak();
  if (cpu) {
    need.shared_need = 0;
    need.sharing_ranks = 0;
    for (int r = 0; r < n; ++r)
      if (get_u64(&all[4 * size_t(r)]) == get_u64(mine.data())) {
        need.shared_need += int64_t(get_u64(&all[4 * size_t(r) + 2]));
        ++need.sharing_ranks;
      }
  }
  const std::string problem = memory_fit_problem(recipe, need, offer);

  // The lowest rank that is short speaks for all: its index, then its message, to everyone.
  int32_t first = problem.empty() ? -n : -world.rank();
  if (n > 1) world.all_reduce(make_tensor(&first, DType::i32, Device::cpu, {1}), ReduceOp::max);
  if (first == -n) return;
  const std::string message = n > 1 ? broadcast_text(world, problem, -first) : problem;
  if (!recipe.train.allow_oversubscribe) throw ConfigError(message);
  if (world.rank() == 0) {
    fmt::print("memory: note: {}; starting because train.allow_oversubscribe is true\n", message);
    std::fflush(stdout);
  }
}

}  // namespace trainer
