// Fuzzes llm.c model file headers: the input's first 1024 bytes are the header (zero-padded
// when shorter) and the next 8, when present, the file's size in bytes (little-endian int64;
// otherwise the input's size), so that headers of large models can match their size without
// large inputs. Checked as LlmcModelFile's constructor does (llmc_config_from_header, then
// the tensor offsets it builds). Expected: a model shape or an InputError. A finding: any
// other exception, a crash or sanitizer report (overflow in the size arithmetic), a hang, or
// an allocation past -malloc_limit_mb.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz/fuzz_util.h"
#include "model/llmc_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kHeaderBytes = trainer::kLlmcHeaderInts * sizeof(int32_t);
  int32_t header[trainer::kLlmcHeaderInts] = {};
  std::memcpy(header, data, size < kHeaderBytes ? size : kHeaderBytes);
  int64_t file_size = static_cast<int64_t>(size);
  if (size >= kHeaderBytes + sizeof(int64_t)) std::memcpy(&file_size, data + kHeaderBytes, sizeof(int64_t));
  trainer::fuzz::expect_ok_or_user_error([&] {
    const trainer::GptConfig config = trainer::llmc_config_from_header("fuzz.bin", header, file_size);
    trainer::llmc_tensor_offsets(config);
  });
  return 0;
}
