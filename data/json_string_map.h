// Reader for a flat JSON object whose values are integers, such as GPT-2's encoder.json
// ({"token": id, ...}). Only that shape is accepted; anything else is an InputError naming
// the file, line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainer {

// Keys come back decoded (escapes resolved, \uXXXX surrogate pairs joined) as UTF-8, in file
// order. `file` only names the source in error messages.
std::vector<std::pair<std::string, int64_t>> parse_json_int_map(std::string_view text,
                                                                 const std::string& file);

}  // namespace trainer
