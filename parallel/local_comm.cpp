// LocalComm (see local_comm.h).
#include "parallel/local_comm.h"

#include "kernels/base/check.h"
#include "kernels/base/errors.h"

namespace trainer {

CommRequestPtr LocalComm::copy_block(Tensor out, Tensor in, const char* what) {
  TRAINER_CHECK(in.numel() == out.numel() && in.dtype == out.dtype,
                std::string("LocalComm ") + what + ": in " + in.shape_str() + " vs out " + out.shape_str());
  if (out.data != in.data) backend_.copy(out.data, in.data, in.bytes());
  return std::make_unique<DoneRequest>();
}

CommRequestPtr LocalComm::all_reduce_async(Tensor, ReduceOp) { return std::make_unique<DoneRequest>(); }
CommRequestPtr LocalComm::reduce_scatter_async(Tensor out, Tensor in) { return copy_block(out, in, "reduce_scatter"); }
CommRequestPtr LocalComm::all_gather_async(Tensor out, Tensor in) { return copy_block(out, in, "all_gather"); }
CommRequestPtr LocalComm::all_to_all_async(Tensor out, Tensor in) { return copy_block(out, in, "all_to_all"); }
CommRequestPtr LocalComm::broadcast_async(Tensor, int root) {
  TRAINER_CHECK(root == 0, "LocalComm broadcast: root " + std::to_string(root) + " in a group of one");
  return std::make_unique<DoneRequest>();
}
CommRequestPtr LocalComm::send_async(Tensor, int peer, int) {
  TRAINER_CHECK(false, "LocalComm: send to rank " + std::to_string(peer) + " in a group of one");
  return nullptr;
}
CommRequestPtr LocalComm::recv_async(Tensor, int peer, int) {
  TRAINER_CHECK(false, "LocalComm: recv from rank " + std::to_string(peer) + " in a group of one");
  return nullptr;
}
CommRequestPtr LocalComm::barrier_async() { return std::make_unique<DoneRequest>(); }

std::unique_ptr<Comm> LocalComm::split(int color, int, const std::string& group) {
  if (color < 0) return nullptr;
  return std::make_unique<LocalComm>(backend_, group);
}

}  // namespace trainer
