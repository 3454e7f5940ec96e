// The enum <-> name table helpers (kernels/enum_names.h) on a table of their own: name and
// value round trips, unknown names and values, the values and names in table order, and the
// choice lists messages print. They run at compile time too (static_assert).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/enum_names.h"

namespace trainer::testing {
namespace {

enum class Fruit : uint8_t { apple, pear, plum, quince };
// Not in enum order, on purpose: the table's order is the listing order.
constexpr EnumName<Fruit> kFruitNames[] = {
    {Fruit::pear, "pear"}, {Fruit::apple, "apple"}, {Fruit::plum, "plum"}};

enum class Single : uint8_t { only };
constexpr EnumName<Single> kSingleNames[] = {{Single::only, "only"}};

static_assert(enum_name(kFruitNames, Fruit::plum)[0] == 'p');
static_assert(enum_from_name(kFruitNames, "apple") == Fruit::apple);
static_assert(!enum_from_name(kFruitNames, "quince").has_value());
static_assert(enum_values(kFruitNames)[0] == Fruit::pear);

TEST_CASE("enum names: every value round-trips through its name") {
  for (const EnumName<Fruit>& row : kFruitNames) {
    CAPTURE(row.name);
    CHECK(std::string(enum_name(kFruitNames, row.value)) == row.name);
    REQUIRE(enum_from_name(kFruitNames, enum_name(kFruitNames, row.value)).has_value());
    CHECK(*enum_from_name(kFruitNames, enum_name(kFruitNames, row.value)) == row.value);
  }
}

TEST_CASE("enum names: unknown names give nothing, names match exactly") {
  CHECK_FALSE(enum_from_name(kFruitNames, "banana").has_value());
  CHECK_FALSE(enum_from_name(kFruitNames, "").has_value());
  CHECK_FALSE(enum_from_name(kFruitNames, "Pear").has_value());
  CHECK_FALSE(enum_from_name(kFruitNames, "pear ").has_value());
  CHECK_FALSE(enum_from_name(kFruitNames, "pea").has_value());
  CHECK_FALSE(enum_from_name(kFruitNames, std::string("pear\0x", 6)).has_value());
}

TEST_CASE("enum names: a value the table lacks is named ?") {
  CHECK(std::string(enum_name(kFruitNames, Fruit::quince)) == "?");
}

TEST_CASE("enum names: values and names come in table order") {
  const auto values = enum_values(kFruitNames);
  CHECK(values.size() == 3);
  CHECK(values[0] == Fruit::pear);
  CHECK(values[1] == Fruit::apple);
  CHECK(values[2] == Fruit::plum);
  CHECK(enum_names(kFruitNames) == std::vector<std::string>{"pear", "apple", "plum"});
}

TEST_CASE("enum names: choice lists for messages") {
  CHECK(enum_choices(kFruitNames) == "pear, apple, plum");
  CHECK(enum_choices(kFruitNames, ", ", " or ") == "pear, apple or plum");
  CHECK(enum_choices(kFruitNames, " | ") == "pear | apple | plum");
  CHECK(enum_choices(kSingleNames) == "only");
  CHECK(enum_choices(kSingleNames, ", ", " or ") == "only");
}

TEST_CASE("enum names: an unknown name's message lists the valid choices") {
  // The pattern every parser follows: look the name up, else name it and list the table.
  auto parse = [](const std::string& text) -> std::string {
    if (std::optional<Fruit> f = enum_from_name(kFruitNames, text)) return enum_name(kFruitNames, *f);
    return "unknown fruit '" + text + "'; valid: " + enum_choices(kFruitNames);
  };
  CHECK(parse("plum") == "plum");
  CHECK(parse("kiwi") == "unknown fruit 'kiwi'; valid: pear, apple, plum");
}

}  // namespace
}  // namespace trainer::testing
