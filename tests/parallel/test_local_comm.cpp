// LocalComm and make_device_comm (parallel/local_comm.h, device_comm.h): a world of one rank
// gets a LocalComm (so a single-GPU run creates no NCCL communicator), whose collectives are
// identities or block copies, whose splits are LocalComms, and which refuses point-to-point
// messages; CPU ranks of a larger world keep the MPI world (nullptr).
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "parallel/device_comm.h"
#include "parallel/local_comm.h"
#include "tests/support/unused_comm.h"

namespace trainer {
namespace {

std::unique_ptr<Backend> cpu_backend() {
  BackendOptions o;
  o.device = DeviceChoice::cpu;
  return make_backend(o);
}



TEST_CASE("a world of one gets a LocalComm and CPU ranks of a larger world keep MPI") {
  auto backend = cpu_backend();
  LocalComm one(*backend, "world");
  std::unique_ptr<Comm> dev = make_device_comm(one, *backend, 300);
  REQUIRE(dev);
  CHECK(dynamic_cast<LocalComm*>(dev.get()) != nullptr);
  CHECK(dev->size() == 1);
  CHECK(dev->name() == "world");

  testing::UnusedComm two(0, 2, "world");
  CHECK(make_device_comm(two, *backend, 300) == nullptr);
}

TEST_CASE("LocalComm: reductions are identities, gathers, scatters and all-to-alls copy one block, splits stay local") {
  auto backend = cpu_backend();
  LocalComm comm(*backend, "world");
  std::vector<float> a = {1, 2, 3, 4}, b(4, -1);
  Tensor ta = make_tensor(a.data(), DType::f32, Device::cpu, {4});
  Tensor tb = make_tensor(b.data(), DType::f32, Device::cpu, {4});
  comm.all_reduce(ta, ReduceOp::sum);
  comm.all_reduce_async(ta, ReduceOp::max)->wait();
  CHECK(a == std::vector<float>{1, 2, 3, 4});
  comm.all_gather(tb, ta);
  CHECK(b == a);
  std::fill(b.begin(), b.end(), -1.0f);
  comm.reduce_scatter_async(tb, ta)->wait();
  CHECK(b == a);
  comm.reduce_scatter(ta, ta);  // in place
  CHECK(a == std::vector<float>{1, 2, 3, 4});
  std::fill(b.begin(), b.end(), -1.0f);
  comm.all_to_all(tb, ta);  // the one block, to itself
  CHECK(b == a);
  comm.broadcast(ta, 0);
  comm.barrier();
  CHECK_THROWS(comm.send(ta, 0, 0));
  CHECK_THROWS(comm.recv_async(ta, 0, 0));
  CHECK_THROWS(comm.broadcast(ta, 1));
  Tensor wrong = make_tensor(b.data(), DType::f32, Device::cpu, {2});
  CHECK_THROWS(comm.all_gather(wrong, ta));
  CHECK_THROWS(comm.all_to_all(wrong, ta));

  std::unique_ptr<Comm> sub = comm.split(3, 0, "data");
  REQUIRE(sub);
  CHECK(dynamic_cast<LocalComm*>(sub.get()) != nullptr);
  CHECK(sub->name() == "data");
  CHECK(comm.split(-1, 0, "tied embedding") == nullptr);
}

}  // namespace
}  // namespace trainer
