// Shared by the harnesses: runs one parse of a fuzz input and sorts its outcome. A UserError
// (ConfigError, InputError) is the parser rejecting bad input, the expected outcome; it must
// say something. Any other exception escapes and aborts (libFuzzer reports it as a crash),
// as do sanitizer reports, timeouts and allocations past -malloc_limit_mb.
#pragma once

#include <cstdlib>
#include <cstdio>

#include "kernels/base/errors.h"

namespace trainer::fuzz {

template <class F>
void expect_ok_or_user_error(F&& parse) {
  try {
    parse();
  } catch (const UserError& e) {
    // An empty message would reach the user as a bare "error:"; every rejection names a cause.
    if (e.what()[0] == '\0') {
      std::fprintf(stderr, "finding: a UserError with an empty message\n");
      std::abort();
    }
  }
}

}  // namespace trainer::fuzz
