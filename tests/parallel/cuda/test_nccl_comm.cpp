// NcclComm on one process (one rank: the lent GPU machines have one GPU, and NCCL refuses two
// ranks on one device). Checks each collective's result, in-place semantics, the ordering of
// the communication stream after queued compute work, async requests, split, and that
// reductions reject u16. Multi-rank sums are checked where a multi-GPU machine runs the
// trainer's data-parallel equivalence tests. Also: a one-rank world (and a one-rank split)
// creates no NCCL communicator, and the watchdog ends a process whose collective never
// completes with exit code 3 and a report naming the operation, group, sequence number and size.
#include <cuda_runtime.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "kernels/cuda/cuda_check.h"
#include "parallel/cuda/nccl_comm.h"
#include "parallel/device_comm.h"
#include "parallel/local_comm.h"
#include "parallel/mpi_comm.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/support/test_util.h"

namespace trainer::testing {
namespace {

// MPI for this test only; ctest runs each case in its own process.
class MpiSession {
 public:
  MpiSession() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      REQUIRE(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS);
      owns_ = true;
    }
  }
  ~MpiSession() {
    if (owns_) MPI_Finalize();
  }

 private:
  bool owns_ = false;
};

TEST_CASE("nccl comm collectives on one rank") {
  MpiSession mpi;
  Rig rig = make_rig(Precision::bf16);
  Backend& be = *rig.gpu;
  std::unique_ptr<Comm> comm = make_nccl_comm(MPI_COMM_WORLD, be, "world", 300);
  REQUIRE(comm->size() == 1);
  CHECK(comm->rank() == 0);
  CHECK(comm->name() == "world");
  Tensors gpu(be);
  const int64_t n = 1000;
  const auto x = random_floats(n, 141);

  // The collective must see the fill queued on the compute stream before it, and later
  // compute (scale) must see the collective's result.
  Tensor buf = gpu.upload(x, DType::f32, {n});
  be.fill(buf, 3.0f);
  comm->all_reduce(buf, ReduceOp::sum);
  be.scale(buf, 2.0f);
  check_equal(gpu.read(buf), std::vector<float>(n, 6.0f), "all_reduce sum after fill, before scale");

  Tensor mx = gpu.upload(x, DType::f32, {n});
  comm->all_reduce(mx, ReduceOp::max);
  check_equal(gpu.read(mx), x, "all_reduce max");

  const auto xb = rounded(x, DType::bf16);
  Tensor b16 = gpu.upload(xb, DType::bf16, {n});
  comm->all_reduce(b16, ReduceOp::sum);
  check_equal(gpu.read(b16), xb, "all_reduce bf16");
  // A bf16 gradient wire's reduce-scatter in place (ZeRO-1's buckets on GPUs).
  Tensor wire = gpu.upload(xb, DType::bf16, {n});
  comm->reduce_scatter(wire, wire);
  check_equal(gpu.read(wire), xb, "reduce_scatter bf16 in place");

  Tensor in = gpu.upload(x, DType::f32, {n});
  Tensor out = gpu.poisoned(DType::f32, {n});
  comm->reduce_scatter(out, in);
  check_equal(gpu.read(out), x, "reduce_scatter");
  Tensor gathered = gpu.poisoned(DType::f32, {n});
  comm->all_gather(gathered, in);
  check_equal(gpu.read(gathered), x, "all_gather");
  Tensor exchanged = gpu.poisoned(DType::f32, {n});
  comm->all_to_all(exchanged, in);  // one rank: its one block to itself
  check_equal(gpu.read(exchanged), x, "all_to_all");
  comm->broadcast(in, 0);
  check_equal(gpu.read(in), x, "broadcast");

  Tensor async_buf = gpu.upload(x, DType::f32, {n});
  CommRequestPtr request = comm->all_reduce_async(async_buf, ReduceOp::sum);
  request->wait();
  request->wait();  // waiting twice is harmless
  be.scale(async_buf, 0.5f);
  std::vector<float> half(x);
  for (float& v : half) v *= 0.5f;
  check_equal(gpu.read(async_buf), half, "all_reduce_async then scale");

  std::unique_ptr<Comm> sub = comm->split(0, 0, "sub");
  REQUIRE(sub != nullptr);
  CHECK(sub->size() == 1);
  CHECK(dynamic_cast<LocalComm*>(sub.get()) != nullptr);  // no NCCL communicator for one rank
  Tensor sub_buf = gpu.upload(x, DType::f32, {n});
  sub->all_reduce(sub_buf, ReduceOp::sum);
  check_equal(gpu.read(sub_buf), x, "split group all_reduce");
  CHECK(comm->split(-1, 0, "none") == nullptr);

  Tensor u16 = gpu.alloc(DType::u16, {8});
  CHECK_THROWS(comm->all_reduce(u16, ReduceOp::sum));
  comm->barrier();
}

TEST_CASE("a one-rank world on the GPU creates no NCCL communicator") {
  MpiSession mpi;
  Rig rig = make_rig(Precision::bf16);
  MpiComm world(MPI_COMM_WORLD, "world", 300);
  REQUIRE(world.size() == 1);
  std::unique_ptr<Comm> dev = make_device_comm(world, *rig.gpu, 300);
  REQUIRE(dev != nullptr);
  CHECK(dynamic_cast<LocalComm*>(dev.get()) != nullptr);
  Tensors gpu(*rig.gpu);
  const auto x = random_floats(64, 7);
  Tensor in = gpu.upload(x, DType::f32, {64});
  Tensor out = gpu.poisoned(DType::f32, {64});
  dev->all_gather(out, in);
  check_equal(gpu.read(out), x, "LocalComm all_gather on the GPU");
}

// Run only as the child of the next case (skipped unless --no-skip). One rank can stall nothing
// NCCL accepts (a receive from itself without a matching send is ncclInvalidUsage at once), so
// the compute stream stalls instead, as a hung kernel would: a host function that sleeps 20 s
// holds it, and the all-reduce queued behind it cannot start within the 2 s timeout.
TEST_CASE("nccl watchdog child: a collective that never starts" * doctest::skip()) {
  REQUIRE(std::getenv("TRAINER_WATCHDOG_CHILD") != nullptr);
  MpiSession mpi;
  Rig rig = make_rig(Precision::fp32);
  std::unique_ptr<Comm> comm = make_nccl_comm(MPI_COMM_WORLD, *rig.gpu, "pipeline", 2);
  Tensors gpu(*rig.gpu);
  Tensor buf = gpu.alloc(DType::f32, {1024});
  rig.gpu->synchronize();
  TRAINER_CUDA_CHECK(cudaLaunchHostFunc(
      cuda_backend_stream(*rig.gpu), [](void*) { std::this_thread::sleep_for(std::chrono::seconds(20)); }, nullptr));
  comm->all_reduce_async(buf, ReduceOp::sum)->wait();
  rig.gpu->synchronize();  // blocks until the watchdog ends the process
  FAIL("the stalled all-reduce completed before the watchdog ended the process");
}

TEST_CASE("nccl watchdog ends a stalled collective with exit code 3 and names it") {
  // This test binary itself (test_parallel_cuda, or its build on the CUDA emulator).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  RunResult r = run_command("TRAINER_WATCHDOG_CHILD=1 timeout 120 " + self +
                            " --no-skip -tc='nccl watchdog child: a collective that never starts'");
  CAPTURE(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.output.find("NCCL watchdog: all_reduce #1 on the pipeline group (4096 bytes) did not complete "
                      "within 2 s (parallel.timeout_s)") != std::string::npos);
}

}  // namespace
}  // namespace trainer::testing
