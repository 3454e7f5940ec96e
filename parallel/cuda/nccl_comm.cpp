// NcclComm (see nccl_comm.h): NCCL collectives and p2p on a communication stream, ordered
// against the compute stream with events, watched by a monitor thread. Every CUDA, NCCL and
// MPI call is checked.
#include "parallel/cuda/nccl_comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/base/errors.h"
#include "kernels/cuda/cuda_backend.h"
#include "parallel/device_placement.h"
#include "parallel/local_comm.h"
#include "parallel/op_watchdog.h"

namespace trainer {

namespace {

// How long the watchdog gives ncclCommAbort before it exits without it.
constexpr int kAbortGraceSeconds = 10;

[[noreturn]] void fail(const std::string& what, const char* call, const char* file, int line) {
  std::ostringstream s;
  s << what << " at " << file << ":" << line << ": " << call;
  throw std::runtime_error(s.str());
}

#define NCCL_COMM_CUDA_CHECK(call)                                                              \
  do {                                                                                          \
    const cudaError_t status_ = (call);                                                         \
    if (status_ != cudaSuccess)                                                                 \
      fail(std::string("CUDA error ") + cudaGetErrorName(status_), #call, __FILE__, __LINE__);  \
  } while (0)

#define NCCL_COMM_NCCL_CHECK(call)                                                              \
  do {                                                                                          \
    const ncclResult_t status_ = (call);                                                        \
    if (status_ != ncclSuccess)                                                                 \
      fail(std::string("NCCL error: ") + ncclGetErrorString(status_), #call, __FILE__, __LINE__); \
  } while (0)

#define NCCL_COMM_MPI_CHECK(call)                                                               \
  do {                                                                                          \
    const int status_ = (call);                                                                 \
    if (status_ != MPI_SUCCESS) fail("MPI error " + std::to_string(status_), #call, __FILE__, __LINE__); \
  } while (0)

// True while an exception unwinds through the caller: the error that started it has not been
// printed yet (main prints it), and after a sticky CUDA error every later call fails too.
bool unwinding() { return std::uncaught_exceptions() > 0; }

// Teardown paths cannot throw: a failure there is fatal, except while an earlier exception
// unwinds, when it is reported and the first error is left to reach main.
void check_or_abort(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s failed: %s\n", unwinding() ? "during error cleanup" : "fatal", what,
               cudaGetErrorString(status));
  if (!unwinding()) std::abort();
}

// Cleanup on a path that is already failing or tearing down: report, do not throw.
void report_mpi(int status, const char* what) {
  if (status != MPI_SUCCESS) std::fprintf(stderr, "MPI error %d in %s during cleanup\n", status, what);
}

struct Wire {
  ncclDataType_t type;
  size_t count;
};

// What an operation does with a tensor's elements: moves them as they are, or reduces them.
enum class Traffic : uint8_t { moves, reduces };

// How a tensor travels: its own NCCL type, or raw bytes for types NCCL lacks (u16) when the
// operation does not reduce.
Wire wire(const Tensor& t, Traffic traffic, const char* what) {
  if (!t.defined() || t.device != Device::cuda)
    fail("NcclComm: tensor is not on the GPU", what, __FILE__, __LINE__);
  const size_t n = static_cast<size_t>(t.numel());
  switch (t.dtype) {
    case DType::f32: return {ncclFloat32, n};
    case DType::bf16: return {ncclBfloat16, n};
    case DType::i32: return {ncclInt32, n};
    case DType::u16:
      if (traffic == Traffic::reduces) fail("NcclComm: cannot reduce u16 tensors", what, __FILE__, __LINE__);
      return {ncclUint8, n * 2};
  }
  fail("NcclComm: unknown dtype", what, __FILE__, __LINE__);
}

// Completes when the compute stream has waited for the operation's event.
class NcclRequest final : public CommRequest {
 public:
  NcclRequest(cudaEvent_t done, cudaStream_t compute) : done_(done), compute_(compute) {}
  ~NcclRequest() override {
    if (!waited_) check_or_abort(cudaStreamWaitEvent(compute_, done_, 0), "cudaStreamWaitEvent");
    check_or_abort(cudaEventDestroy(done_), "cudaEventDestroy");
  }
  void wait() override {
    if (waited_) return;
    NCCL_COMM_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_, 0));
    waited_ = true;
  }

 private:
  cudaEvent_t done_;
  cudaStream_t compute_;
  bool waited_ = false;
};

double monotonic_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int world_rank() {
  int rank = -1;
  NCCL_COMM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  return rank;
}

class NcclComm final : public Comm {
 public:
  NcclComm(MPI_Comm mpi_comm, Backend& backend, std::string name, double timeout_s)
      : backend_(backend),
        compute_(cuda_backend_stream(backend)),
        name_(std::move(name)),
        timeout_s_(timeout_s),
        watchdog_(name_, timeout_s),
        my_world_rank_(world_rank()),
        device_(cuda_backend_device(backend)) {
    NCCL_COMM_MPI_CHECK(MPI_Comm_dup(mpi_comm, &mpi_));
    NCCL_COMM_MPI_CHECK(MPI_Comm_rank(mpi_, &rank_));
    NCCL_COMM_MPI_CHECK(MPI_Comm_size(mpi_, &size_));
    world_ranks_ = member_world_ranks(mpi_, size_);
    NCCL_COMM_CUDA_CHECK(cudaSetDevice(device_));
    check_distinct_devices();
    ncclUniqueId id;
    if (rank_ == 0) NCCL_COMM_NCCL_CHECK(ncclGetUniqueId(&id));
    NCCL_COMM_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi_));
    NCCL_COMM_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
    int lowest = 0, highest = 0;
    NCCL_COMM_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
    // Higher priority than compute so collectives overlapping a backward pass get the SMs
    // they need as soon as blocks free up.
    NCCL_COMM_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, highest));
    NCCL_COMM_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    monitor_ = std::thread([this] { monitor(); });
  }

  ~NcclComm() override {
    // The last collectives complete while the monitor still watches them: a peer that died
    // during them ends this process by the watchdog instead of hanging it in shutdown. An
    // error on its way to main does not wait (ncclCommAbort below drops them).
    if (!unwinding()) check_or_abort(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    {
      std::lock_guard<std::mutex> lock(stop_mutex_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    monitor_.join();
    for (const WatchedOp& op : watchdog_.drain())
      if (op.handle) check_or_abort(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(op.handle)), "cudaEventDestroy");
    if (unwinding()) {
      // An error is on its way to main (which aborts the job): do not wait for operations
      // whose peers may never arrive; ncclCommAbort drops them.
      const ncclResult_t aborted = ncclCommAbort(comm_);
      if (aborted != ncclSuccess)
        std::fprintf(stderr, "during error cleanup: ncclCommAbort failed: %s\n", ncclGetErrorString(aborted));
    } else {
      if (ncclCommDestroy(comm_) != ncclSuccess) {
        std::fprintf(stderr, "fatal: ncclCommDestroy failed\n");
        std::abort();
      }
    }
    check_or_abort(cudaEventDestroy(ready_), "cudaEventDestroy");
    check_or_abort(cudaStreamDestroy(stream_), "cudaStreamDestroy");
    int finalized = 0;
    report_mpi(MPI_Finalized(&finalized), "MPI_Finalized");
    if (!finalized) report_mpi(MPI_Comm_free(&mpi_), "MPI_Comm_free");
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  InFlightCost in_flight_cost() const override { return InFlightCost::none; }

  CommRequestPtr all_reduce_async(Tensor buf, ReduceOp op) override {
    const Wire w = wire(buf, Traffic::reduces, "all_reduce");
    const ncclRedOp_t nccl_op = op == ReduceOp::sum ? ncclSum : ncclMax;
    return enqueue("all_reduce", -1, buf.bytes(), [&] { NCCL_COMM_NCCL_CHECK(ncclAllReduce(buf.data, buf.data, w.count, w.type, nccl_op, comm_, stream_)); });
  }

  CommRequestPtr reduce_scatter_async(Tensor out, Tensor in) override {
    const Wire wo = wire(out, Traffic::reduces, "reduce_scatter out");
    const Wire wi = wire(in, Traffic::reduces, "reduce_scatter in");
    if (in.dtype != out.dtype || wi.count != wo.count * size_t(size_))
      fail("NcclComm: reduce_scatter needs in = size() x out of one dtype", "reduce_scatter", __FILE__, __LINE__);
    return enqueue("reduce_scatter", -1, in.bytes(), [&] { NCCL_COMM_NCCL_CHECK(ncclReduceScatter(in.data, out.data, wo.count, wo.type, ncclSum, comm_, stream_)); });
  }

  CommRequestPtr all_gather_async(Tensor out, Tensor in) override {
    const Wire wo = wire(out, Traffic::moves, "all_gather out");
    const Wire wi = wire(in, Traffic::moves, "all_gather in");
    if (in.dtype != out.dtype || wo.count != wi.count * size_t(size_))
      fail("NcclComm: all_gather needs out = size() x in of one dtype", "all_gather", __FILE__, __LINE__);
    return enqueue("all_gather", -1, out.bytes(), [&] { NCCL_COMM_NCCL_CHECK(ncclAllGather(in.data, out.data, wi.count, wi.type, comm_, stream_)); });
  }

  // NCCL has no all-to-all: one send and one receive per peer in a group, which NCCL runs as
  // one operation (its own block by a copy through the network path: simple, and rare).
  CommRequestPtr all_to_all_async(Tensor out, Tensor in) override {
    const Wire wo = wire(out, Traffic::moves, "all_to_all out");
    const Wire wi = wire(in, Traffic::moves, "all_to_all in");
    if (in.dtype != out.dtype || wi.count != wo.count || wi.count % size_t(size_) != 0 || in.data == out.data)
      fail("NcclComm: all_to_all needs in and out of one size (a multiple of size()) and dtype, not in place",
           "all_to_all", __FILE__, __LINE__);
    const size_t block = wi.count / size_t(size_), block_bytes = in.bytes() / size_t(size_);
    return enqueue("all_to_all", -1, out.bytes(), [&] {
      NCCL_COMM_NCCL_CHECK(ncclGroupStart());
      for (int peer = 0; peer < size_; ++peer) {
        NCCL_COMM_NCCL_CHECK(ncclSend(static_cast<const char*>(in.data) + size_t(peer) * block_bytes, block, wi.type,
                                      peer, comm_, stream_));
        NCCL_COMM_NCCL_CHECK(ncclRecv(static_cast<char*>(out.data) + size_t(peer) * block_bytes, block, wo.type, peer,
                                      comm_, stream_));
      }
      NCCL_COMM_NCCL_CHECK(ncclGroupEnd());
    });
  }

  CommRequestPtr broadcast_async(Tensor buf, int root) override {
    const Wire w = wire(buf, Traffic::moves, "broadcast");
    check_rank(root, "broadcast root");
    return enqueue("broadcast", -1, buf.bytes(), [&] { NCCL_COMM_NCCL_CHECK(ncclBroadcast(buf.data, buf.data, w.count, w.type, root, comm_, stream_)); });
  }

  CommRequestPtr send_async(Tensor buf, int peer, int tag) override {
    const Wire w = wire(buf, Traffic::moves, "send");
    check_rank(peer, "send peer");
    check_tag(tag);
    return enqueue("send", world_ranks_[size_t(peer)], buf.bytes(), [&] { NCCL_COMM_NCCL_CHECK(ncclSend(buf.data, w.count, w.type, peer, comm_, stream_)); });
  }

  CommRequestPtr recv_async(Tensor buf, int peer, int tag) override {
    const Wire w = wire(buf, Traffic::moves, "recv");
    check_rank(peer, "recv peer");
    check_tag(tag);
    return enqueue("recv", world_ranks_[size_t(peer)], buf.bytes(), [&] { NCCL_COMM_NCCL_CHECK(ncclRecv(buf.data, w.count, w.type, peer, comm_, stream_)); });
  }

  // A barrier means every rank's queued work has finished, which only the host can see: it
  // waits for both streams and meets the other ranks over MPI before it returns.
  CommRequestPtr barrier_async() override {
    NCCL_COMM_CUDA_CHECK(cudaStreamSynchronize(compute_));
    NCCL_COMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    NCCL_COMM_MPI_CHECK(MPI_Barrier(mpi_));
    return std::make_unique<DoneRequest>();
  }

  std::unique_ptr<Comm> split(int color, int key, const std::string& group) override {
    MPI_Comm sub = MPI_COMM_NULL;
    NCCL_COMM_MPI_CHECK(MPI_Comm_split(mpi_, color < 0 ? MPI_UNDEFINED : color, key, &sub));
    if (sub == MPI_COMM_NULL) return nullptr;
    int sub_size = 0;
    NCCL_COMM_MPI_CHECK(MPI_Comm_size(sub, &sub_size));
    std::unique_ptr<Comm> comm;
    try {
      // A group of one needs no NCCL communicator (see local_comm.h).
      if (sub_size == 1)
        comm = std::make_unique<LocalComm>(backend_, group);
      else
        comm = std::make_unique<NcclComm>(sub, backend_, group, timeout_s_);
    } catch (...) {
      report_mpi(MPI_Comm_free(&sub), "MPI_Comm_free");
      throw;
    }
    NCCL_COMM_MPI_CHECK(MPI_Comm_free(&sub));
    return comm;
  }

 private:
  static std::vector<int> member_world_ranks(MPI_Comm comm, int size) {
    MPI_Group group, world;
    NCCL_COMM_MPI_CHECK(MPI_Comm_group(comm, &group));
    NCCL_COMM_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    std::vector<int> mine(static_cast<size_t>(size)), out(static_cast<size_t>(size));
    for (int i = 0; i < size; ++i) mine[size_t(i)] = i;
    NCCL_COMM_MPI_CHECK(MPI_Group_translate_ranks(group, size, mine.data(), world, out.data()));
    NCCL_COMM_MPI_CHECK(MPI_Group_free(&group));
    NCCL_COMM_MPI_CHECK(MPI_Group_free(&world));
    return out;
  }

  // Two ranks of one communicator on one GPU: NCCL's ncclCommInitRank fails with a bare
  // "invalid usage"; this says which ranks and how to place them (every rank gathers the same
  // placements, so all fail alike).
  void check_distinct_devices() {
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "(unknown)");
    cudaDeviceProp prop{};
    NCCL_COMM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    std::array<uint8_t, 16> uuid{};
    std::memcpy(uuid.data(), prop.uuid.bytes, uuid.size());
    int visible = 0;
    NCCL_COMM_CUDA_CHECK(cudaGetDeviceCount(&visible));
    const DevicePlacement mine = make_device_placement(host, uuid, device_, visible, my_world_rank_);
    std::vector<DevicePlacement> all(static_cast<size_t>(size_));
    NCCL_COMM_MPI_CHECK(MPI_Allgather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine), MPI_BYTE, mpi_));
    if (const auto pair = find_shared_device(all)) {
      report_mpi(MPI_Comm_free(&mpi_), "MPI_Comm_free");
      throw ConfigError(shared_device_message(all, *pair, name_));
    }
  }

  // Orders `issue` (which queues NCCL work on stream_) after the compute stream's queued work
  // and returns a request for its completion. The watchdog knows the operation before it is
  // issued (NCCL may block the host in a first send/recv until the peer arrives) and gets an
  // event of its own to query once it is queued.
  template <class F>
  CommRequestPtr enqueue(const char* op, int peer_world, size_t bytes, F&& issue) {
    NCCL_COMM_CUDA_CHECK(cudaEventRecord(ready_, compute_));
    NCCL_COMM_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    cudaEvent_t watch = nullptr;
    NCCL_COMM_CUDA_CHECK(cudaEventCreateWithFlags(&watch, cudaEventDisableTiming));
    const uint64_t seq = watchdog_.begin(op, peer_world, bytes, monotonic_now(), 0);
    try {
      issue();
    } catch (...) {
      // Never queued: the error goes to the caller; the watchdog must not report it as a hang.
      watchdog_.cancel(seq);
      check_or_abort(cudaEventDestroy(watch), "cudaEventDestroy");
      throw;
    }
    NCCL_COMM_CUDA_CHECK(cudaEventRecord(watch, stream_));
    watchdog_.attach(seq, reinterpret_cast<uint64_t>(watch));
    cudaEvent_t done = nullptr;
    NCCL_COMM_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(done, stream_);
    if (recorded != cudaSuccess) {
      const cudaError_t destroyed = cudaEventDestroy(done);
      if (destroyed != cudaSuccess)
        std::fprintf(stderr, "cudaEventDestroy during cleanup: %s\n", cudaGetErrorString(destroyed));
      NCCL_COMM_CUDA_CHECK(recorded);
    }
    return std::make_unique<NcclRequest>(done, compute_);
  }

  // The monitor thread: every 100 ms, NCCL's asynchronous error state and the oldest pending
  // operation. Either failure is fatal for the whole job: the report goes to stderr, the
  // communicator is aborted (its kernels return, so no GPU stays occupied) and the process exits
  // with code 3, which makes mpirun/srun end the other ranks. MPI is not called from here: the
  // runtime is initialised MPI_THREAD_FUNNELED.
  void monitor() {
    if (cudaSetDevice(device_) != cudaSuccess) die("cudaSetDevice failed in the watchdog thread");
    std::unique_lock<std::mutex> lock(stop_mutex_);
    while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
      if (queried != ncclSuccess)
        die("ncclCommGetAsyncError failed on the " + name_ + " group: " + ncclGetErrorString(queried));
      if (state != ncclSuccess && state != ncclInProgress)
        die("NCCL reported an asynchronous error on the " + name_ + " group: " + ncclGetErrorString(state));
      const double now = monotonic_now();
      std::optional<WatchedOp> late = watchdog_.poll(now, [this](uint64_t handle) {
        if (handle == 0) return false;  // still being issued
        auto event = reinterpret_cast<cudaEvent_t>(handle);
        const cudaError_t status = cudaEventQuery(event);
        if (status == cudaErrorNotReady) return false;
        if (status != cudaSuccess)
          die(std::string("CUDA error while watching the ") + name_ + " group: " + cudaGetErrorString(status));
        check_or_abort(cudaEventDestroy(event), "cudaEventDestroy");
        return true;
      });
      if (late)
        die(watchdog_.describe(*late, now) + "; another rank has probably died or hung");
    }
  }

  [[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "fatal (rank %d): NCCL watchdog: %s; aborting the job\n", my_world_rank_, why.c_str());
    std::fflush(stderr);
    // ncclCommAbort can itself block (a free that waits for a stuck stream, proxy teardown):
    // the exit code must come regardless.
    try {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::seconds(kAbortGraceSeconds));
        std::fprintf(stderr, "ncclCommAbort did not return within %d s; exiting\n", kAbortGraceSeconds);
        std::fflush(stderr);
        std::_Exit(3);
      }).detach();
    } catch (...) {
      std::_Exit(3);  // no thread to bound the abort with: exit without it
    }
    const ncclResult_t aborted = ncclCommAbort(comm_);
    if (aborted != ncclSuccess) std::fprintf(stderr, "ncclCommAbort failed: %s\n", ncclGetErrorString(aborted));
    std::fflush(stderr);
    std::_Exit(3);
  }

  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= size_)
      fail("NcclComm: rank " + std::to_string(r) + " out of range for group size " + std::to_string(size_), what,
           __FILE__, __LINE__);
  }
  static void check_tag(int tag) {
    if (tag < 0) fail("NcclComm: negative tag " + std::to_string(tag), "p2p", __FILE__, __LINE__);
  }

  Backend& backend_;
  cudaStream_t compute_;
  std::string name_;
  double timeout_s_;
  OpWatchdog watchdog_;
  int my_world_rank_;
  int device_;
  std::vector<int> world_ranks_;  // world rank of each member, for messages naming a peer
  std::thread monitor_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  MPI_Comm mpi_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
};

}  // namespace

std::unique_ptr<Comm> make_nccl_comm(MPI_Comm mpi_comm, Backend& backend, std::string name, double timeout_s) {
  return std::make_unique<NcclComm>(mpi_comm, backend, std::move(name), timeout_s);
}

}  // namespace trainer
