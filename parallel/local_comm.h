// LocalComm: the Comm of a group with one rank, on any backend's buffers. Nothing travels:
// reductions and broadcasts leave the buffer as it is, reduce_scatter, all_gather and all_to_all copy `in`
// to `out` (one block) through the backend, and a split gives another LocalComm. Point-to-point
// messages have no peer and are an internal error.
//
// Why: NCCL sets up a communicator with its own threads, streams and device buffers even for
// one rank, and a run on one GPU (or a one-rank data, tensor or pipeline group) needs none of it.
#pragma once

#include <memory>
#include <string>

#include "kernels/backend.h"
#include "parallel/comm.h"

namespace trainer {

class LocalComm final : public Comm {
 public:
  LocalComm(Backend& backend, std::string name) : backend_(backend), name_(std::move(name)) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return name_; }
  InFlightCost in_flight_cost() const override { return InFlightCost::none; }

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
  CommRequestPtr copy_block(Tensor out, Tensor in, const char* what);

  Backend& backend_;
  std::string name_;
};

}  // namespace trainer
