// Comm: collectives and point-to-point messages over one group of ranks. MpiComm works on
// host buffers, NcclComm on device buffers. Every call is checked; a failure is fatal.
// Invariants: all ranks of a group call collectives in the same order with the same sizes;
// reduce_scatter/all_gather use equal blocks (in.numel() == size() * out.numel() and the
// reverse); the element type of every buffer is f32 unless stated.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/tensor.h"

namespace trainer {

enum class ReduceOp : uint8_t { sum, max };

// What a non-blocking operation holds while in flight. MPI may keep a temporary copy of its
// buffer inside the library until it completes, so callers bound how many are in flight.
// NCCL works in the caller's buffers and wait() only makes the compute stream wait on an event,
// so a bound there would hold the rest of the backward behind the communication instead.
enum class InFlightCost : uint8_t { buffer_copy, none };

// A pending non-blocking operation; wait() completes it. Destroying an unwaited request
// waits for it.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  virtual void wait() = 0;
};
using CommRequestPtr = std::unique_ptr<CommRequest>;

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  virtual InFlightCost in_flight_cost() const = 0;

  // In place.
  virtual void all_reduce(Tensor buf, ReduceOp op) = 0;
  // out (n) = this rank's block of the element-wise sum of in (size() * n). In place: out may
  // be exactly this rank's block of in (the rest of in is then left unspecified).
  virtual void reduce_scatter(Tensor out, Tensor in) = 0;
  // out (size() * n) = every rank's in (n), in rank order.
  virtual void all_gather(Tensor out, Tensor in) = 0;
  virtual void broadcast(Tensor buf, int root) = 0;
  virtual void send(Tensor buf, int peer, int tag) = 0;
  virtual void recv(Tensor buf, int peer, int tag) = 0;
  virtual void barrier() = 0;

  virtual CommRequestPtr all_reduce_async(Tensor buf, ReduceOp op) = 0;
  virtual CommRequestPtr reduce_scatter_async(Tensor out, Tensor in) = 0;
  virtual CommRequestPtr all_gather_async(Tensor out, Tensor in) = 0;
  virtual CommRequestPtr send_async(Tensor buf, int peer, int tag) = 0;
  virtual CommRequestPtr recv_async(Tensor buf, int peer, int tag) = 0;

  // Ranks with the same color form a new group, ordered by key, called `group` in messages
  // ("data", "tensor", "pipeline"). Collective over this group; a rank passing a negative color
  // joins no group and gets nullptr.
  virtual std::unique_ptr<Comm> split(int color, int key, const std::string& group) = 0;
};

}  // namespace trainer
