// MpiRuntime: starts MPI (a plain process runs as an MPI singleton, no launcher needed) and
// finalises it on destruction. Owns the world communicator as a Comm.
// When OMP_NUM_THREADS is not set, it gives each rank an equal share of the node's cores
// (at least one thread), so that several ranks on one node do not oversubscribe it; a value
// the user set is kept.
//
// Ending in an error: run() runs a command's work and ends every exception cleanly on every
// rank (see run()). Without it, a user error on one rank alone (its data folder is missing,
// its shard was truncated) left that rank silent in MPI_Finalize while the others waited in a
// collective until parallel.timeout_s.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "parallel/comm.h"
#include "parallel/hang_report.h"

namespace trainer {

class MpiRuntime {
 public:
  // timeout_s bounds every wait on a collective or message: a longer wait means a rank died,
  // and the job is aborted with a message instead of hanging.
  explicit MpiRuntime(double timeout_s);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  Comm& world() { return *world_; }
  // Rank among the processes on this node (picks the GPU).
  int local_rank() const { return local_rank_; }
  // Ranks on this node.
  int local_size() const { return local_size_; }
  // Names this rank in hang reports ("rank 3 (data 1, tensor 0, pipeline 1)").
  void set_rank_label(const std::string& label) { reporter_->set_label(label); }

  // Runs body and returns its exit code. A UserError (exit code 2) on a single process is
  // printed as "error: MESSAGE". Under several ranks, the failing rank waits up to
  // kUserErrorAgreementSeconds for the others to fail too: when they all do (the usual case,
  // every rank checks the same recipe), rank 0 prints its message once, then each different
  // message of another rank as "error (rank R): ...", and every rank returns 2 after a clean
  // MPI_Finalize. When the others carry on, the failing rank prints its own message with its
  // rank and host and aborts the job with exit code 2. Any other exception is fatal: printed
  // with the rank, and the job is aborted with exit code 1.
  int run(const std::function<int()>& body);
  // run()'s ending for a user error with this message, for an error raised before the
  // command's MpiRuntime existed (a recipe every rank fails to load): returns 2, or aborts.
  int end_with_user_error(const std::string& message);

  // How long a rank that failed waits for the others to fail with it.
  static constexpr double kUserErrorAgreementSeconds = 10.0;

 private:
  std::unique_ptr<HangReporter> reporter_;  // outlives world_ and every group split from it
  std::unique_ptr<Comm> world_;
  // A duplicate of MPI_COMM_WORLD used only to agree on an error, so that its barrier can
  // never be matched with a collective the other ranks are in.
  MPI_Comm errors_comm_ = MPI_COMM_NULL;
  int local_rank_ = 0;
  int local_size_ = 1;
  bool owns_mpi_ = false;
};

}  // namespace trainer
