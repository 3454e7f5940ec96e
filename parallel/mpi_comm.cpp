// MpiComm implementation (see mpi_comm.h).
#include "parallel/mpi_comm.h"

#include <chrono>
#include <cstring>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/base/bf16.h"
#include "kernels/base/check.h"
#include "parallel/launcher_env.h"

namespace trainer {

void mpi_check(int code, const char* what, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  throw std::runtime_error(std::string("MPI call failed at ") + file + ":" + std::to_string(line) +
                           ": " + what + ": " + std::string(msg, len));
}

namespace {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::i32: return MPI_INT32_T;
    case DType::bf16:
    case DType::u16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

// MPI's user-op signature: inout[i] = in[i] + inout[i] for bf16 bit patterns, added in f32
// and rounded once per pair (commutative, so MPI may pair them in any fixed tree).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = bf16_from_f32(f32_from_bf16(a[i]) + f32_from_bf16(b[i]));
}

void check_host(const Tensor& t, const char* what) {
  TRAINER_CHECK(t.device == Device::cpu, std::string(what) + ": MpiComm needs host buffers");
}

void check_reducible(const Tensor& t, ReduceOp op, const char* what) {
  check_host(t, what);
  TRAINER_CHECK(t.dtype == DType::f32 || t.dtype == DType::i32 || (t.dtype == DType::bf16 && op == ReduceOp::sum),
                std::string(what) + ": MpiComm reduces f32 or i32 (and sums bf16), got " + dtype_name(t.dtype) +
                    (op == ReduceOp::sum ? "" : " for max"));
}

// Waits for one request, polling so that a stalled peer is noticed. Spins briefly first (low
// latency for small messages), then sleeps between polls so that ranks sharing cores yield.
// With a reporter the operation is in its journal from start to the end of its wait.
class MpiRequest : public CommRequest {
 public:
  MpiRequest(MPI_Request request, std::string what, double timeout_s, HangReporter* reporter, uint64_t handle)
      : request_(request), what_(std::move(what)), timeout_s_(timeout_s), reporter_(reporter), handle_(handle) {}
  ~MpiRequest() override {
    if (request_ != MPI_REQUEST_NULL) wait();
  }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    if (reporter_) reporter_->journal().set_waiting(handle_, true);
    auto start = std::chrono::steady_clock::now();
    int done = 0;
    for (long polls = 0;; ++polls) {
      TRAINER_MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
      if (done) break;
      if (polls > 2000) std::this_thread::sleep_for(std::chrono::microseconds(polls > 20000 ? 500 : 20));
      if ((polls & 255) == 0) {
        if (reporter_) reporter_->poll();
        double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > timeout_s_) {
          if (reporter_) reporter_->timed_out(what_, timeout_s_);
          int rank = 0;
          MPI_Comm_rank(MPI_COMM_WORLD, &rank);
          std::fprintf(stderr,
                       "fatal (rank %d%s): %s did not complete within %.0f s (parallel.timeout_s); "
                       "another rank has probably died or hung; aborting the job\n",
                       rank, slurm_tag(launcher_env()).c_str(), what_.c_str(), timeout_s_);
          std::fflush(stderr);
          MPI_Abort(MPI_COMM_WORLD, 3);
        }
      }
    }
    request_ = MPI_REQUEST_NULL;
    if (reporter_) reporter_->journal().end(handle_);
  }

 private:
  MPI_Request request_;
  std::string what_;
  double timeout_s_;
  HangReporter* reporter_;
  uint64_t handle_;
};

// An out-of-place reduce-scatter standing in for an in-place one (out is this rank's block of
// in, which MPI does not allow; its MPI_IN_PLACE form puts the result elsewhere): the result
// lands in a temporary and is copied into `out` when the operation completes.
class CopyOnWaitRequest : public CommRequest {
 public:
  CopyOnWaitRequest(std::vector<char> temp, Tensor out) : temp_(std::move(temp)), out_(out) {}
  ~CopyOnWaitRequest() override {
    if (inner_) CopyOnWaitRequest::wait();
  }
  void* temp() { return temp_.data(); }
  void start(CommRequestPtr inner) { inner_ = std::move(inner); }
  void wait() override {
    if (!inner_) return;
    inner_->wait();
    inner_.reset();
    if (!temp_.empty()) std::memcpy(out_.data, temp_.data(), temp_.size());
  }

 private:
  std::vector<char> temp_;
  Tensor out_;
  CommRequestPtr inner_;
};

}  // namespace

MpiComm::MpiComm(MPI_Comm comm, std::string name, double timeout_s, HangReporter* reporter)
    : comm_(comm), name_(std::move(name)), timeout_s_(timeout_s), reporter_(reporter) {
  TRAINER_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  TRAINER_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  // World rank of every member, for messages that name a peer.
  MPI_Group group, world;
  TRAINER_MPI_CHECK(MPI_Comm_group(comm_, &group));
  TRAINER_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  std::vector<int> mine(static_cast<size_t>(size_), 0);
  for (int i = 0; i < size_; ++i) mine[size_t(i)] = i;
  world_ranks_.resize(size_t(size_));
  TRAINER_MPI_CHECK(MPI_Group_translate_ranks(group, size_, mine.data(), world, world_ranks_.data()));
  TRAINER_MPI_CHECK(MPI_Group_free(&group));
  TRAINER_MPI_CHECK(MPI_Group_free(&world));
  TRAINER_MPI_CHECK(MPI_Op_create(&bf16_sum, 1, &bf16_sum_));
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && bf16_sum_ != MPI_OP_NULL) MPI_Op_free(&bf16_sum_);
  if (!finalized && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF && comm_ != MPI_COMM_NULL)
    MPI_Comm_free(&comm_);
}

CommRequestPtr MpiComm::make_request(MPI_Request request, const char* what, size_t bytes, int peer) {
  std::string text = std::string(what) + " on group '" + name_ + "'";
  const int peer_world = peer >= 0 ? world_ranks_.at(size_t(peer)) : -1;
  if (peer >= 0) text += std::string(std::strcmp(what, "send") == 0 ? " to" : " from") + " rank " + std::to_string(peer_world);
  ++seq_;
  uint64_t handle = 0;
  if (reporter_) handle = reporter_->journal().begin({name_, seq_, what, peer_world, bytes, journal_clock_s(), false});
  return std::make_unique<MpiRequest>(request, text, timeout_s_, reporter_, handle);
}

MPI_Op MpiComm::reduce_op(ReduceOp op, DType dtype) const {
  if (dtype == DType::bf16) return bf16_sum_;
  return op == ReduceOp::sum ? MPI_SUM : MPI_MAX;
}

CommRequestPtr MpiComm::all_reduce_async(Tensor buf, ReduceOp op) {
  if (size_ == 1) return std::make_unique<DoneRequest>();
  check_reducible(buf, op, "all_reduce");
  MPI_Request r;
  TRAINER_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf.data, static_cast<int>(buf.numel()),
                                   mpi_type(buf.dtype), reduce_op(op, buf.dtype), comm_, &r));
  return make_request(r, "all_reduce", buf.bytes());
}

CommRequestPtr MpiComm::reduce_scatter_async(Tensor out, Tensor in) {
  check_reducible(in, ReduceOp::sum, "reduce_scatter");
  check_host(out, "reduce_scatter");
  TRAINER_CHECK(in.numel() == out.numel() * size_ && in.dtype == out.dtype,
                "reduce_scatter: in " + in.shape_str() + " vs out " + out.shape_str());
  MPI_Request r;
  if (static_cast<char*>(in.data) + out.bytes() * static_cast<size_t>(rank_) == out.data) {
    auto copy = std::make_unique<CopyOnWaitRequest>(std::vector<char>(out.bytes()), out);
    TRAINER_MPI_CHECK(MPI_Ireduce_scatter_block(in.data, copy->temp(), static_cast<int>(out.numel()),
                                                mpi_type(in.dtype), reduce_op(ReduceOp::sum, in.dtype), comm_, &r));
    copy->start(make_request(r, "reduce_scatter", in.bytes()));
    return copy;
  }
  TRAINER_MPI_CHECK(MPI_Ireduce_scatter_block(in.data, out.data, static_cast<int>(out.numel()),
                                              mpi_type(in.dtype), reduce_op(ReduceOp::sum, in.dtype), comm_, &r));
  return make_request(r, "reduce_scatter", in.bytes());
}

CommRequestPtr MpiComm::all_gather_async(Tensor out, Tensor in) {
  check_host(out, "all_gather");
  check_host(in, "all_gather");
  TRAINER_CHECK(out.numel() == in.numel() * size_ && in.dtype == out.dtype,
                "all_gather: in " + in.shape_str() + " vs out " + out.shape_str());
  MPI_Request r;
  // In place when `in` is this rank's block of `out`.
  const void* src = in.data;
  if (static_cast<char*>(out.data) + in.bytes() * static_cast<size_t>(rank_) == in.data) src = MPI_IN_PLACE;
  TRAINER_MPI_CHECK(MPI_Iallgather(src, static_cast<int>(in.numel()), mpi_type(in.dtype), out.data,
                                   static_cast<int>(in.numel()), mpi_type(in.dtype), comm_, &r));
  return make_request(r, "all_gather", out.bytes());
}

CommRequestPtr MpiComm::all_to_all_async(Tensor out, Tensor in) {
  check_host(out, "all_to_all");
  check_host(in, "all_to_all");
  TRAINER_CHECK(out.numel() == in.numel() && in.numel() % size_ == 0 && in.dtype == out.dtype,
                "all_to_all: in " + in.shape_str() + " vs out " + out.shape_str() + " over " + std::to_string(size_) +
                    " ranks");
  TRAINER_CHECK(out.data != in.data || in.numel() == 0, "all_to_all: not in place");
  const int block = static_cast<int>(in.numel() / size_);
  MPI_Request r;
  TRAINER_MPI_CHECK(MPI_Ialltoall(in.data, block, mpi_type(in.dtype), out.data, block, mpi_type(in.dtype), comm_, &r));
  return make_request(r, "all_to_all", out.bytes());
}

CommRequestPtr MpiComm::broadcast_async(Tensor buf, int root) {
  check_host(buf, "broadcast");
  if (size_ == 1) return std::make_unique<DoneRequest>();
  MPI_Request r;
  TRAINER_MPI_CHECK(MPI_Ibcast(buf.data, static_cast<int>(buf.numel()), mpi_type(buf.dtype), root,
                               comm_, &r));
  return make_request(r, "broadcast", buf.bytes());
}

CommRequestPtr MpiComm::send_async(Tensor buf, int peer, int tag) {
  check_host(buf, "send");
  MPI_Request r;
  TRAINER_MPI_CHECK(MPI_Isend(buf.data, static_cast<int>(buf.numel()), mpi_type(buf.dtype), peer,
                              tag, comm_, &r));
  return make_request(r, "send", buf.bytes(), peer);
}

CommRequestPtr MpiComm::recv_async(Tensor buf, int peer, int tag) {
  check_host(buf, "recv");
  MPI_Request r;
  TRAINER_MPI_CHECK(MPI_Irecv(buf.data, static_cast<int>(buf.numel()), mpi_type(buf.dtype), peer,
                              tag, comm_, &r));
  return make_request(r, "recv", buf.bytes(), peer);
}

CommRequestPtr MpiComm::barrier_async() {
  if (size_ == 1) return std::make_unique<DoneRequest>();
  MPI_Request r;
  TRAINER_MPI_CHECK(MPI_Ibarrier(comm_, &r));
  return make_request(r, "barrier", 0);
}

std::unique_ptr<Comm> MpiComm::split(int color, int key, const std::string& group) {
  MPI_Comm sub;
  TRAINER_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub));
  if (sub == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiComm>(sub, group, timeout_s_, reporter_);
}

}  // namespace trainer
