// LocalComm (see local_comm.h).
#include "parallel/local_comm.h"

#include "kernels/base/check.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace {

class DoneRequest final : public CommRequest {
 public:
  void wait() override {}
};

}  // namespace

void LocalComm::copy_block(Tensor out, Tensor in, const char* what) {
  TRAINER_CHECK(in.numel() == out.numel() && in.dtype == out.dtype,
                std::string("LocalComm ") + what + ": in " + in.shape_str() + " vs out " + out.shape_str());
  if (out.data != in.data) backend_.copy(out.data, in.data, in.bytes());
}

void LocalComm::all_reduce(Tensor, ReduceOp) {}
void LocalComm::reduce_scatter(Tensor out, Tensor in) { copy_block(out, in, "reduce_scatter"); }
void LocalComm::all_gather(Tensor out, Tensor in) { copy_block(out, in, "all_gather"); }
void LocalComm::broadcast(Tensor, int root) {
  TRAINER_CHECK(root == 0, "LocalComm broadcast: root " + std::to_string(root) + " in a group of one");
}
void LocalComm::send(Tensor, int peer, int) {
  TRAINER_CHECK(false, "LocalComm: send to rank " + std::to_string(peer) + " in a group of one");
}
void LocalComm::recv(Tensor, int peer, int) {
  TRAINER_CHECK(false, "LocalComm: recv from rank " + std::to_string(peer) + " in a group of one");
}
void LocalComm::barrier() {}

CommRequestPtr LocalComm::all_reduce_async(Tensor buf, ReduceOp op) {
  all_reduce(buf, op);
  return std::make_unique<DoneRequest>();
}
CommRequestPtr LocalComm::reduce_scatter_async(Tensor out, Tensor in) {
  reduce_scatter(out, in);
  return std::make_unique<DoneRequest>();
}
CommRequestPtr LocalComm::all_gather_async(Tensor out, Tensor in) {
  all_gather(out, in);
  return std::make_unique<DoneRequest>();
}
CommRequestPtr LocalComm::send_async(Tensor buf, int peer, int tag) {
  send(buf, peer, tag);
  return std::make_unique<DoneRequest>();
}
CommRequestPtr LocalComm::recv_async(Tensor buf, int peer, int tag) {
  recv(buf, peer, tag);
  return std::make_unique<DoneRequest>();
}

std::unique_ptr<Comm> LocalComm::split(int color, int, const std::string& group) {
  if (color < 0) return nullptr;
  return std::make_unique<LocalComm>(backend_, group);
}

}  // namespace trainer
