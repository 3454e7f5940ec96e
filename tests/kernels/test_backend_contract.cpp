// The front doors on the CPU backend: every op accepts its valid call and rejects each broken
// one (wrong shape, dtype, device, forbidden alias, missing argument) with a message naming the
// op and the argument (the table is tests/kernels/contract_cases.h, shared with the CUDA tests).
// Also: the table covers every op of the op list with every kind of break that applies to it.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "tests/kernels/contract_cases.h"

namespace trainer::testing {
namespace {

TEST_CASE("backend contract: the CPU front doors accept valid calls and name what a broken one breaks") {
  auto be = make_cpu_backend();
  check_contract(*be);
}

TEST_CASE("backend contract: the table breaks every op in every way that applies") {
  std::map<std::string, std::set<Broken>> kinds;
  for (const ContractCase& c : contract_cases()) kinds[c.op].insert(c.broken);
  // Every op of the op list (op_list.h) and nothing else.
  std::set<std::string> listed, tabled;
#define TRAINER_LIST_OP_NAME(Op, Result, ...) listed.insert(Op::kName);
  TRAINER_OPS(TRAINER_LIST_OP_NAME)
#undef TRAINER_LIST_OP_NAME
  for (const auto& entry : kinds) tabled.insert(entry.first);
  CHECK(tabled == listed);
  // Ops of one tensor (or of many inputs alike) have no shape to get wrong and nothing to alias.
  const std::set<std::string> single = {"scale", "fill", "init_normal", "sum_squares", "sum_squares_many"};
  // Not a structured binding: CAPTURE's lambda may not capture one before C++20 (clang).
  for (const auto& entry : kinds) {
    const std::string& op = entry.first;
    const std::set<Broken>& set = entry.second;
    CAPTURE(op);
    CHECK(set.count(Broken::nothing) == 1);
    CHECK(set.count(Broken::dtype) == 1);
    CHECK(set.count(Broken::device) == 1);
    if (single.count(op) == 0) {
      CHECK(set.count(Broken::shape) == 1);
      CHECK(set.count(Broken::alias) == 1);
    }
  }
}

}  // namespace
}  // namespace trainer::testing
