// DryComm (parallel/dry_comm.h): any rank of any group size, nothing moves, the equal-block rule
// and peers are checked, and a shared CommMeter follows the temporaries its model assigns from
// each call's start to its completion, keeping the peak.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "parallel/dry_comm.h"

namespace trainer {
namespace {

Tensor host(std::vector<float>& v) { return make_tensor(v.data(), DType::f32, Device::cpu, {int64_t(v.size())}); }

TEST_CASE("DryComm moves nothing and checks sizes and peers") {
  DryComm c(1, 4, "data");
  CHECK(c.rank() == 1);
  CHECK(c.size() == 4);
  CHECK(c.name() == "data");
  std::vector<float> in(8, 1.0f), out(2, 5.0f), bad(3, 0.0f);
  c.all_reduce(host(in), ReduceOp::sum);
  c.reduce_scatter(host(out), host(in));
  c.all_gather(host(in), host(out));
  CHECK(in == std::vector<float>(8, 1.0f));
  CHECK(out == std::vector<float>(2, 5.0f));
  CHECK_THROWS_AS(c.reduce_scatter(host(bad), host(in)), std::logic_error);
  CHECK_THROWS_AS(c.all_gather(host(in), host(bad)), std::logic_error);
  std::vector<float> out8(8, 5.0f);
  c.all_to_all(host(out8), host(in));
  CHECK(out8 == std::vector<float>(8, 5.0f));
  CHECK_THROWS_AS(c.all_to_all(host(out), host(in)), std::logic_error);  // sizes differ
  CHECK_THROWS_AS(c.all_to_all(host(bad), host(bad)), std::logic_error);  // 3 does not split over 4
  c.send(host(out), 2, 0);
  c.recv(host(out), 0, 0);
  CHECK_THROWS_AS(c.send(host(out), 1, 0), std::logic_error);  // itself
  CHECK_THROWS_AS(c.recv(host(out), 4, 0), std::logic_error);
  CHECK_THROWS_AS(c.split(0, 0, "tensor"), std::logic_error);
  CHECK_THROWS_AS(DryComm(4, 4, "data"), std::logic_error);
}

TEST_CASE("a CommMeter keeps the peak of temporaries in flight across DryComms") {
  CommMeter meter;
  meter.temp_bytes = [](CommCall call, int64_t bytes, int size) -> int64_t {
    return call == CommCall::all_reduce && size > 1 ? bytes : 0;
  };
  DryComm dp(0, 2, "data", &meter), embed(1, 2, "tied embedding", &meter), one(0, 1, "tensor", &meter);
  std::vector<float> a(10), b(30), c(100);
  {
    CommRequestPtr r1 = dp.all_reduce_async(host(a), ReduceOp::sum);
    CommRequestPtr r2 = embed.all_reduce_async(host(b), ReduceOp::sum);
    CHECK(meter.in_flight == 160);
    r1->wait();
    r1->wait();  // completing twice releases once
    CHECK(meter.in_flight == 120);
    one.all_reduce(host(c), ReduceOp::sum);  // a group of one holds nothing
    CHECK(meter.peak == 160);
  }  // r2 completes when destroyed
  CHECK(meter.in_flight == 0);
  dp.all_reduce(host(c), ReduceOp::sum);
  CHECK(meter.peak == 400);
  CHECK(meter.in_flight == 0);
}

}  // namespace
}  // namespace trainer
