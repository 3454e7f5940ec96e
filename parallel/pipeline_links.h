// The pipeline's point-to-point links and the communicators that carry them.
//
// NCCL runs each communicator's operations in issue order on one stream, and a send or a
// receive there holds that stream until the peer's matching call is at the head of the peer's
// stream on that communicator. Links whose messages interleave in orders that differ between
// their ends must therefore not share a communicator. The chain's links share two, activations
// (s -> s + 1) on one and gradients (s + 1 -> s) on the other. The ring of the virtual stages
// (interleaved) adds the wrap-around link, the last stage -> stage 0 for activations and back
// for gradients, whose messages interleave with the chain's: on the chain's communicators the
// stages wait for each other in a cycle (p 2, m 2, v 2: stage 0's activation stream holds
// send(0) to stage 1, recv(0, chunk 1) from stage 1, send(1) to stage 1; stage 1's holds
// recv(0), recv(1) from stage 0, then send(0) to stage 0). So the wrap-around link has two
// communicators of its own, groups of the two end stages only. test_pipeline_nccl_order.cpp
// replays every schedule's calls on this layout (and shows the cycles without it).
// MPI matches by tag and progresses every request independently; it gets the same
// communicators, so both transports run one code path.
#pragma once

#include <cstdint>

#include "parallel/comm.h"
#include "parallel/pipeline_schedule.h"

namespace trainer {

// chain: stages talk to their neighbours only; ring: also the last stage with stage 0 (virtual
// stages).
enum class PipelineLinks : uint8_t { chain, ring };

// One stage's pipeline communicators (all null with one stage).
struct PipelineComms {
  Comm* act = nullptr;   // the pipeline group: activations, stage s -> s + 1
  Comm* grad = nullptr;  // the pipeline group: gradients, stage s + 1 -> s
  // The wrap-around link (ring only, on stage 0 and the last stage, else null): a group of
  // those two stages, stage 0 its rank 0. wrap_act: activations last -> 0; wrap_grad:
  // gradients 0 -> last.
  Comm* wrap_act = nullptr;
  Comm* wrap_grad = nullptr;
};

// Where a message action goes: the communicator and the peer's rank in it.
struct PipelineRoute {
  Comm* comm = nullptr;
  int peer = 0;
};

// The route of `stage`'s message action (recv_act, send_act, recv_grad, send_grad) to or from
// its ring neighbour (pipeline_schedule.h's next_stage / prev_stage). Throws for a compute
// action or where the communicator it needs is null.
PipelineRoute pipeline_route(const PipelineComms& comms, ActionKind kind, int stage, int n_stages);

}  // namespace trainer
