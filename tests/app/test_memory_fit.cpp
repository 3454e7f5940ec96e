// memory_fit_problem (app/engine/memory_fit.h): a run whose planned peak exceeds the memory on
// offer is refused with the plan's figures, the offer's source and what to change; one that
// fits is not. check_memory_fits on one process: a tiny recipe passes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "app/engine/memory_fit.h"
#include "app/recipe/recipe.h"

namespace trainer {
namespace {

constexpr int64_t GiB = int64_t(1) << 30;

MemoryNeed need_of(int64_t params, int64_t acts, int64_t transient, int sharing) {
  MemoryNeed n;
  n.rank = 3;
  n.pp_rank = 1;
  n.host = "node7";
  n.plan.store.params = params;
  n.plan.store.grads = params;
  n.plan.store.optimizer = 2 * params;
  n.plan.acts.backward_scratch = acts;
  n.plan.reduction_transient = transient;
  n.sharing_ranks = sharing;
  n.shared_need = n.plan.peak() * sharing;
  return n;
}

TEST_CASE("memory fit: a need above the offer is refused with the plan's numbers, one within it passes") {
  Recipe recipe;
  recipe.path = "configs/big.yaml";
  MemoryOffer cpu{Device::cpu, 20 * GiB, "MemAvailable 20.00 GiB of 24.00 GiB; no cgroup memory limit"};
  MemoryOffer gpu{Device::cuda, 70 * GiB, "70.00 GiB free of 80.00 GiB on H100 (cudaMemGetInfo)"};
  struct Row {
    const char* what;
    MemoryNeed need;
    MemoryOffer offer;
    std::vector<std::string> want;  // empty: fits
  };
  const std::vector<Row> rows = {
      {"fits on the CPU", need_of(1 * GiB, 1 * GiB, 0, 1), cpu, {}},
      {"exactly the offer", need_of(4 * GiB, 4 * GiB, 0, 1), cpu, {}},
      {"one rank too large",
       need_of(8 * GiB, 2 * GiB, 1 * GiB, 1),
       cpu,
       {"configs/big.yaml: the run does not fit in memory", "rank 3 (pipeline stage 1) needs 35.00 GiB at its peak",
        "params 8.00 GiB, master 0 B, grads 8.00 GiB, optimizer 16.00 GiB", "activations 2.00 GiB",
        "host transients 1.00 GiB", "but 20.00 GiB is available (MemAvailable 20.00 GiB of 24.00 GiB",
        "`trainer plan configs/big.yaml`", "train.allow_oversubscribe: true"}},
      {"four ranks on one host together",
       need_of(1 * GiB, 2 * GiB, 0, 4),
       cpu,
       {"needs 6.00 GiB at its peak", "the 4 ranks on host node7 need 24.00 GiB together"}},
      {"a GPU: no host transients in the figures",
       need_of(20 * GiB, 1 * GiB, 0, 1),
       gpu,
       {"needs 81.00 GiB", "but 70.00 GiB is available (70.00 GiB free of 80.00 GiB on H100"}},
      {"petabytes", need_of(int64_t(1) << 50, 0, 0, 1), cpu, {"needs 4.00 PiB"}},
      {"terabytes", need_of(int64_t(1) << 40, 0, 0, 1), cpu, {"needs 4.00 TiB"}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const std::string problem = memory_fit_problem(recipe, r.need, r.offer);
    if (r.want.empty()) {
      CHECK(problem.empty());
      continue;
    }
    for (const std::string& w : r.want) {
      CAPTURE(w);
      CHECK(problem.find(w) != std::string::npos);
    }
    if (r.offer.device == Device::cuda) CHECK(problem.find("host transients") == std::string::npos);
  }
}

}  // namespace
}  // namespace trainer
