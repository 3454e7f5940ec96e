// Fuzzes safetensors files: the input is a whole file (8-byte little-endian header length,
// the JSON header, the data section), read as SafetensorsSet reads each file it maps
// (parse_safetensors: every header field, the tensors tiling the data section). Expected: the
// tensors, or an InputError. A finding: any other exception, a crash or sanitizer report, a
// hang, a huge allocation, or an accepted tensor whose bytes are not inside the input (each
// one's first and last byte is read, so ASan sees a lie the checks let through).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "app/hf/safetensors_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  trainer::fuzz::expect_ok_or_user_error([&] {
    volatile char sink = 0;
    for (const auto& [name, t] : trainer::parse_safetensors(file, "fuzz.safetensors")) {
      const int64_t bytes = t.numel() * trainer::st_dtype_bytes(t.dtype);
      if (bytes == 0) continue;
      sink = static_cast<char>(sink ^ t.data[0] ^ t.data[bytes - 1]);
    }
  });
  return 0;
}
