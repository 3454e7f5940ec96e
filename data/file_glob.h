// Expanding shard and input patterns into file lists. A pattern is a path that may hold shell
// wildcards (*, ?, [...]); matches are sorted by name. A pattern without wildcards must name
// an existing file; a pattern with wildcards must match at least one. Either failure is an
// InputError quoting the pattern (there is never an empty list or a silent skip).
#pragma once

#include <string>
#include <vector>

namespace trainer {

// One pattern.
std::vector<std::string> expand_glob(const std::string& pattern);

// Several patterns separated by commas (as in a recipe's data.train); the concatenation of
// their expansions, in pattern order. A file matched twice is an InputError (its tokens would
// count twice).
std::vector<std::string> expand_glob_list(const std::string& patterns);

}  // namespace trainer
