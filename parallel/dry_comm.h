// DryComm: the Comm of one rank of a group of any size that moves nothing, for dry runs on a
// MetaBackend (`trainer plan`). Collectives check the equal-block rule of comm.h and leave
// their buffers as they are; sends and receives to a valid peer complete at once.
//
// A CommMeter, when given, follows the temporary host memory the real collectives would hold:
// each call asks the meter's model for the bytes of its call kind, message and group size,
// holds them from start to completion (wait() or, for blocking calls, return) and keeps the
// peak over every DryComm sharing the meter. Nothing else is counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "parallel/comm.h"

namespace trainer {

enum class CommCall : uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send, recv };

struct CommMeter {
  // Temporary bytes a call holds: kind, bytes of its input buffer, size of its group.
  std::function<int64_t(CommCall, int64_t in_bytes, int group_size)> temp_bytes;
  int64_t in_flight = 0;
  int64_t peak = 0;
  void hold(int64_t bytes);
  void drop(int64_t bytes) { in_flight -= bytes; }
};

class DryComm final : public Comm {
 public:
  DryComm(int rank, int size, std::string name, CommMeter* meter = nullptr);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  // Metered, it stands for MPI, whose temporaries the meter follows (so ParamStore bounds its
  // buckets in flight as it does over MPI); unmetered, for a transport that holds none.
  InFlightCost in_flight_cost() const override { return meter_ ? InFlightCost::buffer_copy : InFlightCost::none; }

  CommRequestPtr all_reduce_async(Tensor buf, ReduceOp op) override;
  CommRequestPtr reduce_scatter_async(Tensor out, Tensor in) override;
  CommRequestPtr all_gather_async(Tensor out, Tensor in) override;
  CommRequestPtr all_to_all_async(Tensor out, Tensor in) override;
  CommRequestPtr broadcast_async(Tensor buf, int root) override;
  CommRequestPtr send_async(Tensor buf, int peer, int tag) override;
  CommRequestPtr recv_async(Tensor buf, int peer, int tag) override;
  CommRequestPtr barrier_async() override { return std::make_unique<DoneRequest>(); }

  // A dry run builds each group's DryComm itself; there are no other ranks to agree with.
  std::unique_ptr<Comm> split(int color, int key, const std::string& group) override;

 private:
  // Checks the call and returns the temporary bytes it holds (0 without a meter).
  int64_t enter(CommCall call, const Tensor& out, const Tensor& in, int peer);
  CommRequestPtr pending(int64_t bytes);

  int rank_, size_;
  std::string name_;
  CommMeter* meter_;
};

}  // namespace trainer
