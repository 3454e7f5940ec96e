// The communicator for a backend's own buffers over a job's host (MPI) world:
// - a world of one rank: LocalComm, so a single-GPU run creates no NCCL communicator at all;
// - CPU ranks: nullptr, the MPI world itself serves (host buffers are device buffers);
// - GPU ranks: NCCL (make_nccl_comm), with its watchdog bounded by timeout_s; its one-rank
//   sub-groups are LocalComms as well.
// `world` must be an MpiComm when NCCL is needed (its handle bootstraps NCCL).
#pragma once

#include <memory>

#include "kernels/backend.h"
#include "parallel/comm.h"

namespace trainer {

std::unique_ptr<Comm> make_device_comm(Comm& world, Backend& backend, double timeout_s);

}  // namespace trainer
