// Fuzzes the JSON reader (parse_json_int_map, a flat object of integer values such as
// encoder.json): the input is the file's text. Expected: the entries or an InputError. A
// finding: any other exception, a crash or sanitizer report (reads past the text, bad escape
// handling), a hang, or a decoded key longer than the input (no escape decodes to more bytes
// than it takes).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "data/json_string_map.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trainer::fuzz::expect_ok_or_user_error([&] {
    for (const auto& [key, value] : trainer::parse_json_int_map(text, "fuzz.json")) {
      if (key.size() > size) {
        std::fprintf(stderr, "finding: a key of %zu bytes from %zu bytes of JSON\n", key.size(), size);
        std::abort();
      }
    }
  });
  return 0;
}
