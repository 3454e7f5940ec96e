// The emulated CUDA runtime and NCCL (cuda_emu_streams.cpp, nccl_emu.cpp) hold to the rules our
// host code relies on, where an emulator is easily more forgiving than the real thing: a
// stream's work waits behind a pending wait while the host goes on; cudaStreamWaitEvent waits
// for the record issued last at the call, whatever later happens to the event; timing needs a
// timing event; what capture does not model is refused, not recorded; cudaStreamDestroy returns
// at once and its queued work still runs; an aborted communicator's queued operations end.
#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <nccl.h>

#include <vector>

#include "tests/support/ensure_mpi.h"

namespace trainer::testing {
namespace {

// A host function that holds its stream until the test lets it go (it runs when the host
// blocks, in the stream's turn).
struct Gate {
  bool open = false;
  static void wait(void* self) { REQUIRE(static_cast<Gate*>(self)->open); }
};

TEST_CASE("emulated streams: waits, events and destroy as CUDA specifies") {
  cudaStream_t a = nullptr, b = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) == cudaSuccess);
  std::vector<int> x(4, 0);

  // b waits for a's record; a is held by a host function, so b's memset queues behind the wait.
  Gate gate;
  cudaEvent_t e = nullptr;
  REQUIRE(cudaEventCreate(&e) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(a, Gate::wait, &gate) == cudaSuccess);
  REQUIRE(cudaEventRecord(e, a) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(b, e, 0) == cudaSuccess);
  // The wait holds the record issued last at the call: destroying the event does not release it.
  REQUIRE(cudaEventDestroy(e) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(x.data(), 1, sizeof(int), b) == cudaSuccess);
  CHECK(x[0] == 0);
  gate.open = true;
  REQUIRE(cudaStreamSynchronize(b) == cudaSuccess);
  CHECK(x[0] == 0x01010101);

  // Elapsed time needs two finished records of timing events.
  cudaEvent_t t0 = nullptr, t1 = nullptr, quiet = nullptr;
  REQUIRE(cudaEventCreate(&t0) == cudaSuccess);
  REQUIRE(cudaEventCreate(&t1) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&quiet, cudaEventDisableTiming) == cudaSuccess);
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, t0, t1) == cudaErrorInvalidResourceHandle);  // never recorded
  REQUIRE(cudaEventRecord(t0, a) == cudaSuccess);
  REQUIRE(cudaEventRecord(t1, a) == cudaSuccess);
  REQUIRE(cudaEventRecord(quiet, a) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(quiet) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, t0, t1) == cudaSuccess);
  CHECK(ms >= 0);
  CHECK(cudaEventElapsedTime(&ms, t0, quiet) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();

  // An event record while capturing is not modelled: refused, and the capture invalidated.
  REQUIRE(cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(cudaEventRecord(t0, a) == cudaErrorNotSupported);
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(a, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK(graph == nullptr);
  (void)cudaGetLastError();

  // Destroy returns at once; the stream's queued work runs when the host next blocks.
  Gate later;
  REQUIRE(cudaLaunchHostFunc(a, Gate::wait, &later) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(x.data() + 1, 2, sizeof(int), a) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(a) == cudaSuccess);
  CHECK(x[1] == 0);
  later.open = true;
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(x[1] == 0x02020202);
  for (cudaEvent_t ev : {t0, t1, quiet}) REQUIRE(cudaEventDestroy(ev) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(b) == cudaSuccess);
}

TEST_CASE("emulated NCCL: an aborted communicator's queued operations end without it") {
  ensure_mpi();
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  REQUIRE(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  // An all-gather (a copy on one rank) queued behind a held host function, then the abort.
  std::vector<float> x(8, 1.0f), y(8, 0.0f);
  Gate gate;
  REQUIRE(cudaLaunchHostFunc(s, Gate::wait, &gate) == cudaSuccess);
  REQUIRE(ncclAllGather(x.data(), y.data(), x.size(), ncclFloat32, comm, s) == ncclSuccess);
  REQUIRE(ncclCommAbort(comm) == ncclSuccess);
  gate.open = true;
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(y == std::vector<float>(8, 0.0f));
  // The same on a live communicator copies.
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  REQUIRE(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  REQUIRE(ncclAllGather(x.data(), y.data(), x.size(), ncclFloat32, comm, s) == ncclSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(y == x);
  REQUIRE(ncclCommDestroy(comm) == ncclSuccess);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

}  // namespace
}  // namespace trainer::testing
