// Expanding shard and input patterns into file lists. A pattern is a path that may hold shell
// wildcards (*, ?, [...]); matches are sorted by name. A pattern without wildcards must name
// an existing file; a pattern with wildcards must match at least one. Either failure is a
// NoFileError quoting the pattern (and, for a missing folder, naming it); a match that is not
// a regular file or a folder that cannot be read is an InputError (there is never an empty
// list or a silent skip).
#pragma once

#include <string>
#include <vector>

#include "kernels/base/errors.h"

namespace trainer {

// Nothing there: a pattern that matches no file, or a file name that does not exist (so a
// caller can say how the files are made).
struct NoFileError : InputError {
  using InputError::InputError;
};

// One pattern.
std::vector<std::string> expand_glob(const std::string& pattern);

// Several patterns separated by commas (as in a recipe's data.train); the concatenation of
// their expansions, in pattern order. A file matched twice is an InputError (its tokens would
// count twice).
std::vector<std::string> expand_glob_list(const std::string& patterns);

}  // namespace trainer
