// TracingComm: a Comm that forwards every call to another and records it in a TraceRecorder
// while that is enabled: a blocking call is a span on the main thread from its start to the end
// of its wait; a non-blocking one is an async span from its start to the end of its wait, plus a
// "wait" span on the main thread for the time actually spent waiting (in a pipeline, the idle
// time between a stage's passes).
// Args: group, bytes, seq (the operation's number on this communicator, counted whether or not
// tracing is enabled, so the n-th operation of a group has the same seq on every member), peer
// (world rank; send/recv) and, for non-blocking all_reduce, reduce_scatter and all_gather,
// bucket (their index within the step: the gradient bucket in the order the buckets were
// started).
// split() wraps the new communicator too, so one wrapper around the world traces every group
// made from it. A host communicator of the same members (the MPI world beside an NCCL one, or
// the same communicator) is split alongside, to learn the new group's world ranks on the host.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parallel/comm.h"
#include "parallel/trace_recorder.h"

namespace trainer {

class TracingComm : public Comm {
 public:
  // Wraps the world communicator `inner`; `host` has the same members on host buffers (may be
  // `inner` itself). Neither is owned.
  TracingComm(Comm& inner, Comm& host, TraceRecorder& recorder);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  InFlightCost in_flight_cost() const override { return inner_->in_flight_cost(); }

  CommRequestPtr all_reduce_async(Tensor buf, ReduceOp op) override;
  CommRequestPtr reduce_scatter_async(Tensor out, Tensor in) override;
  CommRequestPtr all_gather_async(Tensor out, Tensor in) override;
  CommRequestPtr all_to_all_async(Tensor out, Tensor in) override;
  CommRequestPtr broadcast_async(Tensor buf, int root) override;
  CommRequestPtr send_async(Tensor buf, int peer, int tag) override;
  CommRequestPtr recv_async(Tensor buf, int peer, int tag) override;
  CommRequestPtr barrier_async() override;

  std::unique_ptr<Comm> split(int color, int key, const std::string& group) override;

 private:
  std::vector<TraceArg> args(size_t bytes, int peer, bool bucketed);
  // Forwards one operation: `start` starts it on the inner communicator.
  template <class Start>
  CommRequestPtr traced(const char* op, size_t bytes, int peer, bool bucketed, Start&& start);

  // A split group: owns its communicator and its host twin.
  TracingComm(std::unique_ptr<Comm> owned, std::unique_ptr<Comm> host, TraceRecorder& recorder,
              std::vector<int> peer_world);

  std::unique_ptr<Comm> owned_, host_owned_;
  Comm* inner_;
  Comm* host_;
  TraceRecorder& recorder_;
  std::vector<int> peer_world_;
  uint64_t seq_ = 0;
  int64_t bucket_step_ = -1;
  int bucket_ = 0;
};

}  // namespace trainer
