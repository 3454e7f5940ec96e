// trainer_exe: the trainer binary that app tests start as a child process. TRAINER_EXE (and
// TRAINER_MPIEXEC, the MPI launcher) are defined only for targets that link
// trainer_test_app_support, which are built after the trainer, so a lower layer's test cannot
// come to depend on the program.
#pragma once

#include <string>

namespace trainer::testing {

inline std::string trainer_exe() { return TRAINER_EXE; }

}  // namespace trainer::testing
