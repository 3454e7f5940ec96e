// Excerpts of user values for messages: short values whole, long ones cut at 60 bytes on a
// UTF-8 boundary with their length.
#include <doctest/doctest.h>

#include <string>

#include "kernels/base/excerpt.h"

using namespace trainer;

TEST_CASE("excerpt: whole up to 80 bytes, else 60 bytes and the length, never half a character") {
  struct Row {
    const char* name;
    std::string value;
    std::string shown;
  };
  const std::string euro = "\xE2\x82\xAC";  // 3 bytes
  const Row rows[] = {
      {"empty", "", ""},
      {"short", "steps", "steps"},
      {"80 bytes", std::string(80, 'a'), std::string(80, 'a')},
      {"81 bytes", std::string(81, 'a'), std::string(60, 'a') + "... (81 bytes)"},
      {"50 MB", std::string(50 << 20, 'x'), std::string(60, 'x') + "... (52428800 bytes)"},
      {"a character across byte 60", std::string(59, 'a') + euro + std::string(30, 'b'),
       std::string(59, 'a') + "... (92 bytes)"},
      {"a character ending at byte 60", std::string(57, 'a') + euro + std::string(30, 'b'),
       std::string(57, 'a') + euro + "... (90 bytes)"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CHECK(excerpt(row.value) == row.shown);
  }
}
