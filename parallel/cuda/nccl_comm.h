// NcclComm: the Comm interface over NCCL, on device buffers of a CUDA backend.
// Construction is collective over an MPI communicator: rank 0 creates the NCCL unique id and
// broadcasts it over MPI, every rank joins with ncclCommInitRank on its backend's GPU.
//
// Ordering: NCCL work runs on a communication stream of its own. Each operation first waits
// (device-side, an event) for everything already queued on the backend's compute stream, so
// it sees the finished buffer. A blocking call then makes the compute stream wait for the
// operation: later ops see the result; the host itself does not wait (synchronize() or a copy
// to the host does). An async call returns a request whose wait() does the same, so compute
// queued before wait() overlaps the communication; the caller must not touch the buffers in
// between. Destroying an unwaited request waits for it.
//
// Element types: f32, bf16 and i32 for reductions; any dtype for gather, broadcast and p2p.
// Point-to-point: NCCL has no tags; messages between two ranks match in call order, so the
// tag is only checked for range. As with large blocking MPI sends, a pair of ranks that both
// send before they receive deadlocks: issue complementary orders (or send_async/recv_async in
// matching order on both sides). NCCL also opens a pair's connection at its first send/receive
// and blocks the host until the peer makes the matching call, so the first message of every
// pair must be reachable without waiting on that pair's other traffic (connect_pipeline in
// parallel/pipeline_executor.h opens the pipeline's pairs up front).
// Watchdog: a monitor thread per communicator polls NCCL's asynchronous error state and the
// oldest queued operation (see parallel/op_watchdog.h); an operation that has not completed
// within timeout_s (parallel.timeout_s) is reported with its name, group, sequence number, peer
// and size, the communicator is aborted (ncclCommAbort) and the process exits with code 3.
// Sub-groups of one rank are LocalComms: no NCCL communicator is made for them.
// The backend must outlive the communicator.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "kernels/backend.h"
#include "parallel/comm.h"

namespace trainer {

std::unique_ptr<Comm> make_nccl_comm(MPI_Comm mpi_comm, Backend& backend, std::string name, double timeout_s);

}  // namespace trainer
