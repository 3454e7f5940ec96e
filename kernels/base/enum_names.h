// Enum <-> name tables. Every enum with a spelling (a recipe value, a command-line option, a
// word in a manifest or in printed output) has exactly one table of {value, name} rows,
// defined next to the enum; its *_name function, its parser, the recipe schema's choice list
// and the "valid: ..." text of error messages are all derived from that table, so a name is
// written once. Invariant of a table: each value and each name appears once; the row order is
// the order in which the names are listed to users.
// Header-only, the standard library alone: it belongs to the bottom layer (kernels/base/),
// which every other layer, data/ and the CUDA sources included, may use.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainer {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value`; "?" when the table lacks it (only for a value cast from bad bytes).
template <class E, size_t N>
constexpr const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& row : table)
    if (row.value == value) return row.name;
  return "?";
}

// The value named `text` (exact, case-sensitive match), or nullopt.
template <class E, size_t N>
constexpr std::optional<E> enum_from_name(const EnumName<E> (&table)[N], std::string_view text) {
  for (const EnumName<E>& row : table)
    if (text == row.name) return row.value;
  return std::nullopt;
}

// Every value, in table order.
template <class E, size_t N>
constexpr std::array<E, N> enum_values(const EnumName<E> (&table)[N]) {
  std::array<E, N> values{};
  for (size_t i = 0; i < N; ++i) values[i] = table[i].value;
  return values;
}

// Every name, in table order.
template <class E, size_t N>
std::vector<std::string> enum_names(const EnumName<E> (&table)[N]) {
  std::vector<std::string> names;
  names.reserve(N);
  for (const EnumName<E>& row : table) names.emplace_back(row.name);
  return names;
}

// The names as a list for messages, the last two joined by `last_separator`:
// enum_choices(t, ", ", " or ") gives "a, b or c".
template <class E, size_t N>
std::string enum_choices(const EnumName<E> (&table)[N], std::string_view separator,
                         std::string_view last_separator) {
  std::string text;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) text += i + 1 == N ? last_separator : separator;
    text += table[i].name;
  }
  return text;
}

// The names joined by `separator`: "a, b, c" by default.
template <class E, size_t N>
std::string enum_choices(const EnumName<E> (&table)[N], std::string_view separator = ", ") {
  return enum_choices(table, separator, separator);
}

}  // namespace trainer
