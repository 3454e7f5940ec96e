// Comm: collectives and point-to-point messages over one group of ranks. MpiComm works on
// host buffers, NcclComm on device buffers. Every call is checked; a failure is fatal.
// Implementations provide the non-blocking forms only; every blocking form is its non-blocking
// form waited for at once, written here, so the two cannot drift apart.
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

// A request with nothing left to wait for: the operation completed when it was started.
class DoneRequest final : public CommRequest {
 public:
  void wait() override {}
};

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  virtual InFlightCost in_flight_cost() const = 0;

  // In place.
  void all_reduce(Tensor buf, ReduceOp op) { blocking([&] { return all_reduce_async(buf, op); }); }
  // out (n) = this rank's block of the element-wise sum of in (size() * n). In place: out may
  // be exactly this rank's block of in (the rest of in is then left unspecified).
  void reduce_scatter(Tensor out, Tensor in) { blocking([&] { return reduce_scatter_async(out, in); }); }
  // out (size() * n) = every rank's in (n), in rank order.
  void all_gather(Tensor out, Tensor in) { blocking([&] { return all_gather_async(out, in); }); }
  // in (size() * n): block j goes to rank j; out (size() * n): block i came from rank i (the
  // sequence split turned into a head split and back, tokens to their experts). Not in place.
  void all_to_all(Tensor out, Tensor in) { blocking([&] { return all_to_all_async(out, in); }); }
  void broadcast(Tensor buf, int root) { blocking([&] { return broadcast_async(buf, root); }); }
  void send(Tensor buf, int peer, int tag) { blocking([&] { return send_async(buf, peer, tag); }); }
  void recv(Tensor buf, int peer, int tag) { blocking([&] { return recv_async(buf, peer, tag); }); }
  void barrier() { blocking([&] { return barrier_async(); }); }

  virtual CommRequestPtr all_reduce_async(Tensor buf, ReduceOp op) = 0;
  virtual CommRequestPtr reduce_scatter_async(Tensor out, Tensor in) = 0;
  virtual CommRequestPtr all_gather_async(Tensor out, Tensor in) = 0;
  virtual CommRequestPtr all_to_all_async(Tensor out, Tensor in) = 0;
  virtual CommRequestPtr broadcast_async(Tensor buf, int root) = 0;
  virtual CommRequestPtr send_async(Tensor buf, int peer, int tag) = 0;
  virtual CommRequestPtr recv_async(Tensor buf, int peer, int tag) = 0;
  virtual CommRequestPtr barrier_async() = 0;

  // Ranks with the same color form a new group, ordered by key, called `group` in messages
  // ("data", "tensor", "pipeline"). Collective over this group; a rank passing a negative color
  // joins no group and gets nullptr.
  virtual std::unique_ptr<Comm> split(int color, int key, const std::string& group) = 0;

 protected:
  // True while a blocking form starts its operation: its request is waited for as soon as it
  // is returned. The operation must not depend on it; what records calls may (TracingComm traces
  // a blocking call as one span, not as an operation in flight and a wait).
  bool waited_at_once() const { return waited_at_once_; }

 private:
  template <class Start>
  void blocking(Start&& start) {
    waited_at_once_ = true;
    CommRequestPtr request;
    try {
      request = start();
    } catch (...) {
      waited_at_once_ = false;
      throw;
    }
    waited_at_once_ = false;
    request->wait();
  }

  bool waited_at_once_ = false;
};

}  // namespace trainer
