// A key given twice in one JSON object is refused by the one reader every JSON file goes through
// (config.json, tokenizer.json, encoder.json, the safetensors header and index, JSONL lines):
// named, with where it stands and where it first stood, never a silent last-one-wins.
#include <doctest/doctest.h>

#include <string>

#include "data/json_string_map.h"
#include "data/json_value.h"
#include "kernels/base/errors.h"

using namespace trainer;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("json: a key given twice is an InputError naming it and both places, in every variant") {
  struct Case {
    const char* what;
    std::string text;
    std::string says;  // the whole message
  };
  const Case cases[] = {
      {"top level", R"({"a": 1, "a": 2})",
       R"(f.json:1:10: duplicate key "a" (first at column 2); valid: each key once in an object)"},
      {"same value twice", R"({"a": 1, "a": 1})",
       R"(f.json:1:10: duplicate key "a" (first at column 2); valid: each key once in an object)"},
      {"nested object", "{\"model\": {\"vocab\": {\"x\": 0,\n  \"x\": 1}}}",
       R"(f.json:2:3: duplicate key "x" (first at line 1, column 22); valid: each key once in an object)"},
      {"inside an array", R"([{"k": 1}, {"k": 1, "j": 2, "k": 3}])",
       R"(f.json:1:29: duplicate key "k" (first at column 13); valid: each key once in an object)"},
      {"equal once decoded", R"({"a": 1, "\u0061": 2})",
       R"(f.json:1:10: duplicate key "a" (first at column 2); valid: each key once in an object)"},
      {"control character shown escaped", R"({"\u0001\"": 1, "\u0001\"": 2})",
       R"(f.json:1:17: duplicate key "\u0001\"" (first at column 2); valid: each key once in an object)"},
      {"empty key", R"({"": 1, "": 2})",
       R"(f.json:1:9: duplicate key "" (first at column 2); valid: each key once in an object)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CHECK(error_of(c.text) == c.says);
  }
}

TEST_CASE("json: the same key in different objects, or at different depths, is no duplicate") {
  const JsonValue v = parse_json(R"({"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}], "c": {"b": {"a": 4}}})", "f.json");
  CHECK(v.find("a")->find("a")->integer == 1);
  CHECK(v.find("b")->items[1].find("a")->integer == 3);
}

TEST_CASE("json int map (encoder.json, vocab): a token listed twice is named, not the last one kept") {
  CHECK_THROWS_WITH_AS(parse_json_int_map("{\"hello\": 1,\n \"\\u0120t\": 2,\n \"hello\": 3}", "encoder.json"),
                       R"(encoder.json:3:2: duplicate key "hello" (first at line 1, column 2); valid: each key once )"
                       "in an object",
                       InputError);
}
