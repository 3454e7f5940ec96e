// Graph capture on the CPU backend (it records the checked ops, copies and memsets and
// replays them): tests/kernels/graph_cases.h; backends that cannot capture refuse.
#include <doctest/doctest.h>

#include <stdexcept>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/meta_backend.h"
#include "tests/kernels/graph_cases.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("op graph: a captured sequence replays the eager run's bits on the cpu") {
  auto be = make_cpu_backend();
  check_graph_replay(*be);
}

TEST_CASE("op graph: host copies, waits, allocations, frees and host results are refused while capturing") {
  auto be = make_cpu_backend();
  check_graph_refusals(*be);
}

TEST_CASE("op graph: a backend without capture refuses begin_capture") {
  MetaBackend meta(Device::cuda, DType::bf16);
  CHECK_THROWS_WITH_AS(meta.begin_capture(), doctest::Contains("cannot capture graphs"), std::logic_error);
  CHECK_FALSE(meta.capturing());
}
