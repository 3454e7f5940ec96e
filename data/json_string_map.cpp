// Flat JSON object of integers (see json_string_map.h), on top of the JSON reader.
#include "data/json_string_map.h"

#include <fmt/core.h>

#include "data/json_value.h"
#include "kernels/base/errors.h"

namespace trainer {

std::vector<std::pair<std::string, int64_t>> parse_json_int_map(std::string_view text,
                                                                 const std::string& file) {
  const JsonValue doc = parse_json(text, file);
  auto fail = [&](size_t offset, const std::string& what) {
    throw InputError(fmt::format("{}: {} (expected a JSON object of token -> integer id)",
                                 json_location(text, offset, file), what));
  };
  if (doc.kind != JsonKind::object) fail(doc.offset, fmt::format("found {}", json_kind_name(doc.kind)));
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(doc.members.size());
  for (const auto& [key, value] : doc.members) {
    if (value.kind != JsonKind::number) fail(value.offset, fmt::format("expected an integer, found {}", json_kind_name(value.kind)));
    if (!value.is_integer || value.integer > (INT64_C(1) << 40) || value.integer < -(INT64_C(1) << 40))
      fail(value.offset, "expected an integer, found a number with a fraction, an exponent or too many digits");
    out.emplace_back(key, value.integer);
  }
  return out;
}

}  // namespace trainer
