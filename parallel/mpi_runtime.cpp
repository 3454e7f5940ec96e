// MpiRuntime implementation: MPI_Init_thread (FUNNELED: only the main thread calls MPI; OpenMP
// workers never do), node-local rank from a shared-memory split, MPI_Finalize at the end.
#include "parallel/mpi_runtime.h"

#include <mpi.h>
#include <omp.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/base/errors.h"
#include "parallel/launcher_env.h"
#include "parallel/mpi_comm.h"

namespace trainer {

MpiRuntime::MpiRuntime(double timeout_s) {
  int initialized = 0;
  TRAINER_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    TRAINER_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    owns_mpi_ = true;
  }
  // Rank 0 waits this long for the other ranks' lines of a hang summary.
  reporter_ = std::make_unique<HangReporter>(std::min(10.0, std::max(2.0, timeout_s / 2)));
  world_ = std::make_unique<MpiComm>(MPI_COMM_WORLD, "world", timeout_s, reporter_.get());
  MPI_Comm node;
  TRAINER_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_->rank(),
                                        MPI_INFO_NULL, &node));
  TRAINER_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
  TRAINER_MPI_CHECK(MPI_Comm_size(node, &local_size_));
  TRAINER_MPI_CHECK(MPI_Comm_free(&node));
  TRAINER_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &errors_comm_));
  if (std::getenv("OMP_NUM_THREADS") == nullptr && local_size_ > 1)
    omp_set_num_threads(std::max(1, omp_get_num_procs() / local_size_));
}

MpiRuntime::~MpiRuntime() {
  world_.reset();
  reporter_.reset();
  if (errors_comm_ != MPI_COMM_NULL) MPI_Comm_free(&errors_comm_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

int MpiRuntime::run(const std::function<int()>& body) {
  try {
    return body();
  } catch (const UserError& e) {
    return end_with_user_error(e.what());
  } catch (const std::exception& e) {
    if (world_->size() == 1) throw;
    std::fprintf(stderr, "fatal (rank %d%s): %s\n", world_->rank(), slurm_tag(launcher_env()).c_str(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}

namespace {

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS) return "?";
  return std::string(name, static_cast<size_t>(len));
}

// Every rank's message on rank 0 (empty elsewhere); a collective over comm.
std::vector<std::string> gather_messages(MPI_Comm comm, const std::string& message) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int len = static_cast<int>(message.size());
  std::vector<int> lens(rank == 0 ? size : 0), offsets(rank == 0 ? size : 0);
  TRAINER_MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm));
  int total = 0;
  for (int r = 0; r < static_cast<int>(lens.size()); ++r) {
    offsets[r] = total;
    total += lens[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  TRAINER_MPI_CHECK(MPI_Gatherv(message.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(),
                                MPI_CHAR, 0, comm));
  std::vector<std::string> out;
  for (int r = 0; r < static_cast<int>(lens.size()); ++r) out.push_back(all.substr(offsets[r], lens[r]));
  return out;
}

}  // namespace

int MpiRuntime::end_with_user_error(const std::string& message) {
  const int rank = world_->rank(), size = world_->size();
  if (size == 1) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
    return kUserErrorExitCode;
  }
  MPI_Request request;
  TRAINER_MPI_CHECK(MPI_Ibarrier(errors_comm_, &request));
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(kUserErrorAgreementSeconds);
  int all_failed = 0;
  while (true) {
    TRAINER_MPI_CHECK(MPI_Test(&request, &all_failed, MPI_STATUS_IGNORE));
    if (all_failed || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!all_failed) {
    std::fprintf(stderr,
                 "error (rank %d of %d, host %s, pid %d%s): %s\n"
                 "error: the other ranks did not stop with rank %d within %.0f s; ending the whole job "
                 "(exit code %d)\n",
                 rank, size, host_name().c_str(), static_cast<int>(getpid()), slurm_tag(launcher_env()).c_str(),
                 message.c_str(), rank,
                 kUserErrorAgreementSeconds, kUserErrorExitCode);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, kUserErrorExitCode);
    return kUserErrorExitCode;
  }
  const std::vector<std::string> messages = gather_messages(errors_comm_, message);
  if (rank == 0) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    // Each other message once, with the ranks that gave it (ranks often fail alike).
    std::vector<std::pair<std::string, std::string>> others;  // message, "R, R, ..."
    for (int r = 1; r < size; ++r) {
      if (messages[r] == message) continue;
      auto it = std::find_if(others.begin(), others.end(), [&](const auto& o) { return o.first == messages[r]; });
      if (it == others.end()) it = others.insert(others.end(), {messages[r], ""});
      it->second += (it->second.empty() ? "" : ", ") + std::to_string(r);
    }
    constexpr size_t kMaxOthers = 8;
    for (size_t i = 0; i < others.size() && i < kMaxOthers; ++i)
      std::fprintf(stderr, "error (rank%s %s): %s\n", others[i].second.find(',') == std::string::npos ? "" : "s",
                   others[i].second.c_str(), others[i].first.c_str());
    if (others.size() > kMaxOthers)
      std::fprintf(stderr, "error: and %zu more different messages\n", others.size() - kMaxOthers);
    std::fflush(stderr);
  }
  return kUserErrorExitCode;
}

}  // namespace trainer
