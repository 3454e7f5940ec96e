// make_device_comm (see device_comm.h).
#include "parallel/device_comm.h"

#include "kernels/base/check.h"
#include "parallel/local_comm.h"
#include "parallel/mpi_comm.h"
#ifdef TRAINER_HAVE_CUDA
#include "parallel/cuda/nccl_comm.h"
#endif

namespace trainer {

std::unique_ptr<Comm> make_device_comm(Comm& world, Backend& backend, double timeout_s) {
  if (world.size() == 1) return std::make_unique<LocalComm>(backend, world.name());
  if (backend.device() == Device::cpu) return nullptr;
#ifdef TRAINER_HAVE_CUDA
  auto* mpi_world = dynamic_cast<MpiComm*>(&world);
  TRAINER_CHECK(mpi_world != nullptr, "the CUDA path needs an MPI world communicator");
  return make_nccl_comm(mpi_world->handle(), backend, world.name(), timeout_s);
#else
  TRAINER_CHECK(false, "a " + std::string(device_name(backend.device())) + " backend in a build without CUDA");
  return nullptr;
#endif
}

}  // namespace trainer
