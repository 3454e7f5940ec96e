// MpiComm: the Comm interface over an MPI communicator, on host buffers.
// Every wait is watched: a wait longer than the timeout prints which operation on which group
// stalled and aborts the whole job (a dead rank must not leave the others hanging in a
// collective). With a HangReporter (hang_report.h), every operation is entered in its journal
// (group, sequence number, peer, bytes) and a wait that times out reports through it: every
// rank's journal and rank 0's summary. In a group of one, all_reduce, broadcast and barrier
// have nothing to exchange and no peer to stall on: they complete at once, without MPI, a
// journal entry or a sequence number.
// Supported element types: f32 and i32 for reductions, and bf16 for sums (each pairwise add
// in f32, rounded to nearest even: as NCCL adds bf16); any dtype for gather/broadcast/p2p.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "parallel/comm.h"
#include "parallel/hang_report.h"

namespace trainer {

class MpiComm : public Comm {
 public:
  // Takes ownership of `comm` unless it is MPI_COMM_WORLD or MPI_COMM_SELF. `reporter` (may
  // be null) outlives the communicator and every communicator split from it.
  MpiComm(MPI_Comm comm, std::string name, double timeout_s, HangReporter* reporter = nullptr);
  ~MpiComm() override;
  // Owns the communicator and its bf16 sum: one copy frees them once.
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  InFlightCost in_flight_cost() const override { return InFlightCost::buffer_copy; }

  CommRequestPtr all_reduce_async(Tensor buf, ReduceOp op) override;
  CommRequestPtr reduce_scatter_async(Tensor out, Tensor in) override;
  CommRequestPtr all_gather_async(Tensor out, Tensor in) override;
  CommRequestPtr all_to_all_async(Tensor out, Tensor in) override;
  CommRequestPtr broadcast_async(Tensor buf, int root) override;
  CommRequestPtr send_async(Tensor buf, int peer, int tag) override;
  CommRequestPtr recv_async(Tensor buf, int peer, int tag) override;
  CommRequestPtr barrier_async() override;

  std::unique_ptr<Comm> split(int color, int key, const std::string& group) override;

  MPI_Comm handle() const { return comm_; }

 private:
  // peer: the group rank a message goes to or comes from (-1 for collectives); the watchdog
  // message then names its world rank.
  CommRequestPtr make_request(MPI_Request request, const char* what, size_t bytes, int peer = -1);
  // The MPI operation for op on dtype (check_reducible has refused what none serves).
  MPI_Op reduce_op(ReduceOp op, DType dtype) const;

  MPI_Comm comm_;
  std::string name_;
  double timeout_s_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;  // world rank of each member
  HangReporter* reporter_;
  uint64_t seq_ = 0;  // operations started on this communicator
  MPI_Op bf16_sum_ = MPI_OP_NULL;  // this communicator's own, freed with it
};

// Checks an MPI return code; a failure is fatal with the call site.
void mpi_check(int code, const char* what, const char* file, int line);
#define TRAINER_MPI_CHECK(call) ::trainer::mpi_check((call), #call, __FILE__, __LINE__)

}  // namespace trainer
