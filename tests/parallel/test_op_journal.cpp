// OpJournal (parallel/op_journal.h): what a hang report says about the operations in flight.
#include <doctest/doctest.h>

#include <string>

#include "parallel/op_journal.h"

using namespace trainer;

TEST_CASE("op journal: the waited operation, the others in flight and the last completed per group") {
  OpJournal j;
  CHECK(j.summary(0) == "no operation in flight (computing, or between steps)");
  const uint64_t a = j.begin({"data", 7, "all_reduce", -1, 4 << 20, 10.0, false});
  j.end(a);
  const uint64_t s = j.begin({"pipeline", 11, "send", 5, 4096, 12.0, false});
  const uint64_t r = j.begin({"pipeline", 12, "recv", 1, 4096, 13.0, false});
  CHECK(j.summary(20.0) == "not waiting; in flight: send #11 on the pipeline group to rank 5 (4.0 KiB)");
  j.set_waiting(r, true);
  CHECK(j.summary(314.5) == "waits 301.5 s in recv #12 on the pipeline group from rank 1 (4.0 KiB)");
  CHECK(j.report(3, 314.5) ==
        "rank 3: waiting 301.5 s in recv #12 on the pipeline group from rank 1 (4.0 KiB)\n"
        "rank 3: also in flight: send #11 on the pipeline group to rank 5 (4.0 KiB), started 302.5 s ago\n"
        "rank 3: last completed: data all_reduce #7\n");
  j.end(r);
  j.end(s);  // completes after #12: the group's last completed stays the newest, #12
  CHECK(j.report(0, 400).find("rank 0: not waiting on communication") == 0);
  CHECK(j.report(0, 400).find("last completed: data all_reduce #7, pipeline recv #12\n") != std::string::npos);
  CHECK(describe_entry({"world", 3, "barrier", -1, 0, 0, false}) == "barrier #3 on the world group (0 bytes)");
  CHECK(describe_entry({"data", 1, "all_gather", -1, 3 << 20, 0, false}) == "all_gather #1 on the data group (3.0 MiB)");
}
