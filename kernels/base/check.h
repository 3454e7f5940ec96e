// TRAINER_CHECK: the internal-invariant check every layer uses. A failed check is a bug, not a
// user's mistake: it throws std::logic_error naming the call site, the condition and the
// message, so a bad shape reaches main and, under MPI, aborts the job. User mistakes are the
// errors of kernels/base/errors.h instead.
#pragma once

#include <string>

namespace trainer {

// Throws std::logic_error("internal error at FILE:LINE: check `EXPR` failed[: MSG]").
[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace trainer

#define TRAINER_CHECK(cond, msg)                                                   \
  do {                                                                             \
    if (!(cond)) ::trainer::check_failed(#cond, __FILE__, __LINE__, (msg));        \
  } while (0)
