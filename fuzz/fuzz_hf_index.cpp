// Fuzzes model.safetensors.index.json: the input is the file's text, read as SafetensorsSet
// reads a sharded folder's index (parse_safetensors_index: the object, metadata.total_size,
// weight_map and its shard names). Expected: the shards and their tensors, or an InputError. A
// finding: any other exception, a crash or sanitizer report, a hang, a huge allocation, or an
// accepted shard name that could leave the folder or break a line ('/', . or .., a control
// character).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "app/hf/safetensors_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trainer::fuzz::expect_ok_or_user_error([&] {
    const trainer::SafetensorsIndex index = trainer::parse_safetensors_index(text, "model.safetensors.index.json");
    for (const auto& [file, names] : index.by_file) {
      bool plain = !file.empty() && file != "." && file != ".." && file.find('/') == std::string::npos;
      for (char c : file) plain = plain && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
      if (!plain || names.empty()) {
        std::fprintf(stderr, "finding: shard name accepted that is not a plain file name\n");
        std::abort();
      }
    }
  });
  return 0;
}
