// Fuzzes token shard checking: the input is a whole shard file (header, then tokens), checked
// as Shard's constructor does (check_shard_bytes) against GPT-2's vocabulary size. Expected:
// a layout whose size matches the input exactly, or an InputError. A finding: any other
// exception, a crash or sanitizer report (reads past the input), a hang, a layout that
// disagrees with the input's size.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "data/token_shard.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  trainer::fuzz::expect_ok_or_user_error([&] {
    const trainer::ShardLayout layout = trainer::check_shard_bytes(bytes, "fuzz.bin", 50257);
    const size_t body = static_cast<size_t>(layout.tokens) * trainer::token_width_bytes(layout.width);
    if (trainer::kShardHeaderBytes + body != size) {
      std::fprintf(stderr, "finding: a shard of %zu bytes accepted as %lld tokens\n", size,
                   static_cast<long long>(layout.tokens));
      std::abort();
    }
  });
  return 0;
}
