// DryComm (see dry_comm.h).
#include "parallel/dry_comm.h"

#include <algorithm>

#include "kernels/base/check.h"

namespace trainer {

namespace {

// Releases its held bytes on completion; destroying it unwaited completes it (comm.h).
class DryRequest final : public CommRequest {
 public:
  DryRequest(CommMeter* meter, int64_t bytes) : meter_(meter), bytes_(bytes) {}
  ~DryRequest() override { wait(); }
  void wait() override {
    if (meter_) meter_->drop(bytes_);
    meter_ = nullptr;
  }

 private:
  CommMeter* meter_;
  int64_t bytes_;
};

const char* call_name(CommCall call) {
  switch (call) {
    case CommCall::all_reduce: return "all_reduce";
    case CommCall::reduce_scatter: return "reduce_scatter";
    case CommCall::all_gather: return "all_gather";
    case CommCall::all_to_all: return "all_to_all";
    case CommCall::broadcast: return "broadcast";
    case CommCall::send: return "send";
    case CommCall::recv: return "recv";
  }
  return "?";
}

}  // namespace

void CommMeter::hold(int64_t bytes) {
  in_flight += bytes;
  peak = std::max(peak, in_flight);
}

DryComm::DryComm(int rank, int size, std::string name, CommMeter* meter)
    : rank_(rank), size_(size), name_(std::move(name)), meter_(meter) {
  TRAINER_CHECK(size >= 1 && rank >= 0 && rank < size,
                "DryComm " + name_ + ": rank " + std::to_string(rank) + " of " + std::to_string(size));
}

int64_t DryComm::enter(CommCall call, const Tensor& out, const Tensor& in, int peer) {
  const std::string what = "DryComm " + name_ + " " + call_name(call);
  if (call == CommCall::reduce_scatter)
    TRAINER_CHECK(in.numel() == int64_t(size_) * out.numel(), what + ": in " + in.shape_str() + " vs out " + out.shape_str());
  if (call == CommCall::all_gather)
    TRAINER_CHECK(out.numel() == int64_t(size_) * in.numel(), what + ": in " + in.shape_str() + " vs out " + out.shape_str());
  if (call == CommCall::all_to_all)
    TRAINER_CHECK(out.numel() == in.numel() && in.numel() % size_ == 0,
                  what + ": in " + in.shape_str() + " vs out " + out.shape_str());
  if (call == CommCall::send || call == CommCall::recv || call == CommCall::broadcast)
    TRAINER_CHECK(peer >= 0 && peer < size_ && (call == CommCall::broadcast || peer != rank_),
                  what + ": rank " + std::to_string(peer) + " in a group of " + std::to_string(size_));
  if (!meter_ || !meter_->temp_bytes) return 0;
  return meter_->temp_bytes(call, int64_t(in.bytes()), size_);
}

CommRequestPtr DryComm::pending(int64_t bytes) {
  if (meter_) meter_->hold(bytes);
  return std::make_unique<DryRequest>(meter_, bytes);
}

CommRequestPtr DryComm::all_reduce_async(Tensor buf, ReduceOp) {
  return pending(enter(CommCall::all_reduce, buf, buf, -1));
}
CommRequestPtr DryComm::reduce_scatter_async(Tensor out, Tensor in) {
  return pending(enter(CommCall::reduce_scatter, out, in, -1));
}
CommRequestPtr DryComm::all_gather_async(Tensor out, Tensor in) {
  return pending(enter(CommCall::all_gather, out, in, -1));
}
CommRequestPtr DryComm::all_to_all_async(Tensor out, Tensor in) {
  return pending(enter(CommCall::all_to_all, out, in, -1));
}
CommRequestPtr DryComm::broadcast_async(Tensor buf, int root) {
  return pending(enter(CommCall::broadcast, buf, buf, root));
}
CommRequestPtr DryComm::send_async(Tensor buf, int peer, int) { return pending(enter(CommCall::send, buf, buf, peer)); }
CommRequestPtr DryComm::recv_async(Tensor buf, int peer, int) { return pending(enter(CommCall::recv, buf, buf, peer)); }

std::unique_ptr<Comm> DryComm::split(int, int, const std::string& group) {
  TRAINER_CHECK(false, "DryComm " + name_ + ": split into " + group + "; a dry run builds every group's DryComm itself");
  return nullptr;
}

}  // namespace trainer
