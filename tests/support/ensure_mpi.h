// ensure_mpi: initialises MPI once per process and finalises it at exit, for in-process tests
// that build an MpiComm over MPI_COMM_SELF. Header-only on purpose: only tests that link
// trainer_parallel (which brings MPI) include it, so trainer_test_util stays free of MPI.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <stdexcept>

namespace trainer::testing {

inline void ensure_mpi() {
  int initialized = 0;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS) throw std::runtime_error("MPI_Initialized failed");
  if (initialized) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    throw std::runtime_error("MPI_Init_thread failed");
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

}  // namespace trainer::testing
