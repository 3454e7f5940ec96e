// UnusedComm: a Comm for tests whose every operation is a test failure (std::logic_error), so a
// fake overrides only what the code under test may call and any other call is caught.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "parallel/comm.h"

namespace trainer::testing {

class UnusedComm : public Comm {
 public:
  UnusedComm(int rank, int size, std::string name) : rank_(rank), size_(size), name_(std::move(name)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  InFlightCost in_flight_cost() const override { return InFlightCost::buffer_copy; }
  CommRequestPtr all_reduce_async(Tensor, ReduceOp) override { unexpected("all_reduce"); }
  CommRequestPtr reduce_scatter_async(Tensor, Tensor) override { unexpected("reduce_scatter"); }
  CommRequestPtr all_gather_async(Tensor, Tensor) override { unexpected("all_gather"); }
  CommRequestPtr all_to_all_async(Tensor, Tensor) override { unexpected("all_to_all"); }
  CommRequestPtr broadcast_async(Tensor, int) override { unexpected("broadcast"); }
  CommRequestPtr send_async(Tensor, int, int) override { unexpected("send"); }
  CommRequestPtr recv_async(Tensor, int, int) override { unexpected("recv"); }
  CommRequestPtr barrier_async() override { unexpected("barrier"); }
  std::unique_ptr<Comm> split(int, int, const std::string&) override { unexpected("split"); }

 private:
  [[noreturn]] void unexpected(const char* op) const {
    throw std::logic_error(std::string("unexpected ") + op + " on test communicator " + name_);
  }
  int rank_, size_;
  std::string name_;
};

}  // namespace trainer::testing
