// Fuzzes GPT-2 tokenizer files: the input is encoder.json's text, a NUL byte, then vocab.bpe's
// text (no NUL: vocab.bpe is empty), loaded as load_gpt2_vocab does (parse_gpt2_vocab: the
// JSON map, dense ids, byte alphabet, <|endoftext|>, then every merge line). Expected: a
// vocabulary or an InputError. A finding: any other exception, a crash or sanitizer report,
// a hang, a huge allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/gpt2_vocab.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view encoder = input.substr(0, nul);
  const std::string_view merges = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  trainer::fuzz::expect_ok_or_user_error(
      [&] { trainer::parse_gpt2_vocab(encoder, "encoder.json", merges, "vocab.bpe"); });
  return 0;
}
