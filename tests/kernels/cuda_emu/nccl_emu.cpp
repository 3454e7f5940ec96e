// NCCL on the CPU emulator: the part of its API that parallel/cuda/nccl_comm.cpp calls, over
// MPI between the processes of a job, each an emulated GPU (cuda_emu_cudart.cpp), so NcclComm
// and the trainer's multi-GPU layouts run where no GPU is. As NCCL does:
// - an operation is work on its stream (cuda_emu_stream.h): it starts when the stream reaches
//   it, and the stream's later work waits until it completes; the host goes on meanwhile;
// - a communicator runs its operations in issue order, and a rank's k-th send to a peer meets
//   the peer's k-th receive from it (MPI's order per source, tag and communicator);
// - a send completes only once its receive has started (MPI_Issend: the rendezvous case), so a
//   schedule that needs a send to finish before its peer receives deadlocks here as there;
// - in place means what NCCL documents: an all-gather whose input is this rank's slice of the
//   output, a reduce-scatter whose output is its slice of the input; bf16 sums in f32, rounded
//   at each combination.
// ncclCommInitRank finds its members through the unique id: the creator's world rank and a
// tag; members report their world ranks to it, it answers each with the list, and all make the
// communicator with MPI_Comm_create_group (collective over the members only). Needs MPI
// initialised, calls MPI from the thread that issues work only, and never frees a
// communicator's MPI group communicator (MPI_Finalize does; its free is collective).
// ncclGroupStart/End batch the calls between them into one operation (see Grouped).
// ncclCommAbort ends the communicator's unfinished operations without MPI. Not modelled:
// NCCL's lazy connection set-up, which may block the host in a first send or receive.
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <climits>
#include <functional>
#include <stdexcept>
#include <string>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/base/bf16.h"
#include "tests/kernels/cuda_emu/cuda_emu_stream.h"

// A communicator's state, shared with its queued operations: ncclCommAbort marks it aborted,
// and an operation not yet finished then finishes without MPI, as NCCL aborts its kernels.
struct CommState {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, size = 1;
  bool aborted = false;
};
struct ncclComm {
  std::shared_ptr<CommState> state;
};

namespace emu::nccl {
namespace {

// Init exchanges on MPI_COMM_WORLD, under the 32767 every MPI guarantees (the trainer's own MPI
// traffic runs on duplicated communicators): one tag per init in progress suffices.
constexpr int kTagBase = 30000, kTags = 2000;

struct Id {
  int creator;  // world rank
  int tag;
};

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = trainer::bf16_from_f32(trainer::f32_from_bf16(a[i]) + trainer::f32_from_bf16(b[i]));
}

struct Wire {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  size_t bytes = 0;  // per element
};
bool wire(ncclDataType_t t, Wire& w) {
  switch (t) {
    case ncclFloat32: w = {MPI_FLOAT, 4}; return true;
    case ncclBfloat16: w = {MPI_UINT16_T, 2}; return true;
    case ncclInt32: w = {MPI_INT32_T, 4}; return true;
    case ncclUint8: w = {MPI_BYTE, 1}; return true;
    default: return false;
  }
}
bool reduction(ncclRedOp_t op, ncclDataType_t t, MPI_Op& out) {
  if (op == ncclMax && t != ncclBfloat16) return (out = MPI_MAX), true;
  if (op != ncclSum) return false;
  if (t != ncclBfloat16) return (out = MPI_SUM), true;
  static MPI_Op bf16 = [] {
    MPI_Op o;
    MPI_Op_create(bf16_sum, 1, &o);
    return o;
  }();
  out = bf16;
  return true;
}

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// One operation on its stream: `start` posts the MPI request when the stream reaches it
// (scratch holds what must outlive the call); done when MPI says so, or at once once aborted.
struct Op {
  std::function<void(Op&, const CommState&)> start;
  std::shared_ptr<CommState> comm;
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<unsigned char> scratch;
  bool started = false;
};

// One operation as the stream runs it: the parts' requests posted together when the stream
// reaches it, done when all are. A part is one call; a group (ncclGroupStart .. End) gives one
// operation of several parts, so a send and a receive in a group meet as they do in NCCL (the
// all-to-all's send to itself beside its receive), where issued one by one they would wait for
// each other.
struct Grouped {
  std::vector<std::shared_ptr<Op>> parts;
};

ncclResult_t submit(cudaStream_t stream, std::shared_ptr<Grouped> g) {
  const cudaError_t e = submit_until_done(stream, [g] {
    bool all = true;
    for (const std::shared_ptr<Op>& op : g->parts) {
      if (op->comm->aborted) continue;  // a started request is abandoned with its communicator
      if (!op->started) {
        op->start(*op, *op->comm);
        op->started = true;
      }
    }
    for (const std::shared_ptr<Op>& op : g->parts) {
      if (op->comm->aborted) continue;
      int done = 0;
      if (MPI_Test(&op->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        throw std::runtime_error("NCCL emulator: MPI_Test failed");
      all = all && done != 0;
    }
    return all;
  });
  return e == cudaSuccess ? ncclSuccess : ncclInvalidUsage;
}

// The calls of an open group (ncclGroupStart nests; the outermost End submits), per thread as
// in NCCL, all on one stream.
struct OpenGroup {
  int depth = 0;
  cudaStream_t stream = nullptr;
  std::shared_ptr<Grouped> ops;
};
thread_local OpenGroup open_group;

ncclResult_t enqueue(ncclComm_t comm, cudaStream_t stream, std::function<void(Op&, const CommState&)> start) {
  auto op = std::make_shared<Op>();
  op->start = std::move(start);
  op->comm = comm->state;
  if (open_group.depth > 0) {
    if (!open_group.ops) {
      open_group.ops = std::make_shared<Grouped>();
      open_group.stream = stream;
    }
    if (stream != open_group.stream) return ncclInvalidUsage;  // the emulator's limit: one stream per group
    open_group.ops->parts.push_back(op);
    return ncclSuccess;
  }
  auto g = std::make_shared<Grouped>();
  g->parts.push_back(op);
  return submit(stream, g);
}

// MPI counts are ints: larger operations are beyond the emulator (never a GPU's limit).
bool fits(size_t count) { return count <= size_t(INT_MAX); }

}  // namespace
}  // namespace emu::nccl

namespace nc = emu::nccl;

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error (emulated NCCL)";
    case ncclInvalidArgument: return "invalid argument (emulated NCCL)";
    case ncclInvalidUsage: return "invalid usage (emulated NCCL)";
    default: return "error (emulated NCCL)";
  }
}

ncclResult_t ncclGroupStart() {
  ++nc::open_group.depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (nc::open_group.depth == 0) return ncclInvalidUsage;
  if (--nc::open_group.depth > 0 || !nc::open_group.ops) return ncclSuccess;
  std::shared_ptr<nc::Grouped> ops = std::move(nc::open_group.ops);
  nc::open_group.ops = nullptr;
  return nc::submit(nc::open_group.stream, ops);
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::atomic<int> next{0};
  const nc::Id mine{nc::world_rank(), nc::kTagBase + next++ % nc::kTags};
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, &mine, sizeof mine);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId unique, int rank) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  nc::Id id;
  std::memcpy(&id, unique.internal, sizeof id);
  const int me = nc::world_rank();
  std::vector<int> members(size_t(nranks), -1);  // world rank of each NCCL rank
  // The creator is NcclComm's rank 0; a member that is not one of the id's ranks is misuse.
  if ((me == id.creator) != (rank == 0)) return ncclInvalidUsage;
  auto ok = [](int rc) { return rc == MPI_SUCCESS; };
  if (me == id.creator) {
    members[0] = me;
    for (int i = 1; i < nranks; ++i) {
      int got[2];
      if (!ok(MPI_Recv(got, 2, MPI_INT, MPI_ANY_SOURCE, id.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE)))
        return ncclSystemError;
      if (got[0] <= 0 || got[0] >= nranks || members[size_t(got[0])] != -1)
        throw std::runtime_error("NCCL emulator: ncclCommInitRank: two members claim rank " + std::to_string(got[0]));
      members[size_t(got[0])] = got[1];
    }
    for (int i = 1; i < nranks; ++i)
      if (!ok(MPI_Send(members.data(), nranks, MPI_INT, members[size_t(i)], id.tag, MPI_COMM_WORLD)))
        return ncclSystemError;
  } else {
    const int mine[2] = {rank, me};
    if (!ok(MPI_Send(mine, 2, MPI_INT, id.creator, id.tag, MPI_COMM_WORLD)) ||
        !ok(MPI_Recv(members.data(), nranks, MPI_INT, id.creator, id.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE)))
      return ncclSystemError;
  }
  MPI_Group world, group;
  if (!ok(MPI_Comm_group(MPI_COMM_WORLD, &world))) return ncclSystemError;
  if (!ok(MPI_Group_incl(world, nranks, members.data(), &group))) return ncclSystemError;
  auto state = std::make_shared<CommState>();
  const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, id.tag, &state->mpi);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  if (!ok(rc)) return ncclSystemError;
  state->rank = rank;
  state->size = nranks;
  *comm = new ncclComm{std::move(state)};
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  emu::drain_all();  // as NCCL, after the communicator's operations have completed
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  comm->state->aborted = true;
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  *state = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  nc::Wire w;
  MPI_Op mpi_op;
  if (!comm || !nc::fits(count) || !nc::wire(type, w) || !nc::reduction(op, type, mpi_op)) return ncclInvalidArgument;
  if (send != recv && nc::overlaps(send, count * w.bytes, recv, count * w.bytes)) return ncclInvalidArgument;
  return nc::enqueue(comm, stream, [=](nc::Op& o, const CommState& c) {
    MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, int(count), w.type, mpi_op, c.mpi, &o.request);
  });
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  nc::Wire w;
  MPI_Op mpi_op;
  if (!comm || !nc::fits(count) || !nc::wire(type, w) || !nc::reduction(op, type, mpi_op)) return ncclInvalidArgument;
  const size_t in_bytes = count * w.bytes * size_t(comm->state->size);
  const bool in_place = recv == static_cast<const unsigned char*>(send) + count * w.bytes * size_t(comm->state->rank);
  if (!in_place && nc::overlaps(send, in_bytes, recv, count * w.bytes)) return ncclInvalidArgument;
  return nc::enqueue(comm, stream, [=](nc::Op& o, const CommState& c) {
    const void* from = send;
    if (in_place) {  // MPI forbids aliasing: the input travels from a copy taken when the stream gets here
      o.scratch.assign(static_cast<const unsigned char*>(send), static_cast<const unsigned char*>(send) + in_bytes);
      from = o.scratch.data();
    }
    MPI_Ireduce_scatter_block(from, recv, int(count), w.type, mpi_op, c.mpi, &o.request);
  });
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  nc::Wire w;
  if (!comm || !nc::fits(count) || !nc::wire(type, w)) return ncclInvalidArgument;
  const bool in_place = send == static_cast<const unsigned char*>(recv) + count * w.bytes * size_t(comm->state->rank);
  if (!in_place && nc::overlaps(send, count * w.bytes, recv, count * w.bytes * size_t(comm->state->size)))
    return ncclInvalidArgument;
  return nc::enqueue(comm, stream, [=](nc::Op& o, const CommState& c) {
    MPI_Iallgather(in_place ? MPI_IN_PLACE : send, int(count), w.type, recv, int(count), w.type, c.mpi,
                   &o.request);
  });
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  nc::Wire w;
  if (!comm || !nc::fits(count) || !nc::wire(type, w) || root < 0 || root >= comm->state->size) return ncclInvalidArgument;
  return nc::enqueue(comm, stream, [=](nc::Op& o, const CommState& c) {
    if (c.rank == root && send != recv) std::memmove(recv, send, count * w.bytes);
    MPI_Ibcast(recv, int(count), w.type, root, c.mpi, &o.request);
  });
}

ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  nc::Wire w;
  if (!comm || !nc::fits(count) || !nc::wire(type, w) || peer < 0 || peer >= comm->state->size) return ncclInvalidArgument;
  return nc::enqueue(comm, stream, [=](nc::Op& o, const CommState& c) {
    MPI_Issend(send, int(count), w.type, peer, 0, c.mpi, &o.request);
  });
}

ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  nc::Wire w;
  if (!comm || !nc::fits(count) || !nc::wire(type, w) || peer < 0 || peer >= comm->state->size) return ncclInvalidArgument;
  return nc::enqueue(comm, stream, [=](nc::Op& o, const CommState& c) {
    MPI_Irecv(recv, int(count), w.type, peer, 0, c.mpi, &o.request);
  });
}

}  // extern "C"
