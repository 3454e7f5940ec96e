// checkpoints_to_prune (app/checkpoint/checkpoint_lineage.h), table-driven: a run prunes only
// its own lineage at or below the step it just wrote, never the checkpoint it just wrote, and
// never the newest one with a finite loss.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_lineage.h"

namespace trainer {
namespace {

struct PruneCase {
  const char* what;
  std::vector<CkptSummary> on_disk;  // besides current
  CkptSummary current;
  int keep;
  std::vector<std::string> removed;
};

CkptSummary ck(int64_t step, const char* run, bool finite = true) {
  char name[32];
  std::snprintf(name, sizeof name, "d/step_%08lld", static_cast<long long>(step));
  return CkptSummary{name, step, run, finite};
}

TEST_CASE("checkpoint pruning by lineage, table-driven") {
  const std::vector<PruneCase> cases = {
      {"keep 2 of one run", {ck(30, "a"), ck(20, "a"), ck(10, "a")}, ck(40, "a"), 2, {"d/step_00000020", "d/step_00000010"}},
      {"keep 0 keeps all", {ck(30, "a"), ck(20, "a")}, ck(40, "a"), 0, {}},
      {"another run's higher step is not ours", {ck(10, "b")}, ck(3, "a"), 1, {}},
      {"another run's lower step is not ours either", {ck(1, "b"), ck(2, "a")}, ck(3, "a"), 1, {"d/step_00000002"}},
      {"our abandoned higher step is left alone", {ck(10, "a"), ck(5, "a")}, ck(8, "a"), 1, {"d/step_00000005"}},
      {"the last finite checkpoint survives", {ck(3, "a", false), ck(2, "a", false), ck(1, "a")}, ck(4, "a", false), 1,
       {"d/step_00000003", "d/step_00000002"}},
      {"a finite current needs no older finite one", {ck(2, "a"), ck(1, "a")}, ck(3, "a"), 1,
       {"d/step_00000002", "d/step_00000001"}},
      {"the same step rewritten is current, once", {ck(5, "a"), ck(4, "a")}, ck(5, "a"), 1, {"d/step_00000004"}},
      {"legacy checkpoints (no run) prune among themselves", {ck(2, ""), ck(1, "")}, ck(3, ""), 2, {"d/step_00000001"}},
  };
  for (const PruneCase& c : cases) {
    CAPTURE(c.what);
    CHECK(checkpoints_to_prune(c.on_disk, c.current, c.keep) == c.removed);
  }
}

}  // namespace
}  // namespace trainer
