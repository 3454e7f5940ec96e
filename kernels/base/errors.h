// User-facing errors. A ConfigError (recipe, command line) or InputError (data file,
// checkpoint, model file) is a user's mistake: main catches it once, rank 0 prints the
// message, and the process exits with code 2. The message names the file, the line and
// column where there is one, the value, and what would be valid.
// Internal failures are std::logic_error (TRAINER_CHECK, kernels/base/check.h) or
// std::runtime_error and are fatal.
#pragma once

#include <stdexcept>
#include <string>

namespace trainer {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ConfigError : UserError {
  using UserError::UserError;
};

struct InputError : UserError {
  using UserError::UserError;
};

constexpr int kUserErrorExitCode = 2;

}  // namespace trainer
