// Fuzzes Hugging Face tokenizer.json files: the input is the file's text, a NUL byte, then a
// text to encode (a fixed sample when there is no NUL). The file is read as
// load_hf_tokenizer_spec does (JSON, every component and option, Split regexes compiled by
// the subset matcher), an HfTokenizer is built (vocabulary, merges, added tokens), then the
// text is encoded and the ids decoded. Expected: ids, or a ConfigError/InputError. A finding:
// any other exception, a crash or sanitizer report, a hang, a huge allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/hf_tokenizer.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos
                                    ? std::string_view("Hello world, it's 2024!\n  caf\xC3\xA9 \xF0\x9F\x98\x80<s>")
                                    : input.substr(nul + 1);
  trainer::fuzz::expect_ok_or_user_error([&] {
    const trainer::HfTokenizer tok(trainer::parse_hf_tokenizer_spec(json, "tokenizer.json"));
    tok.decode(tok.encode(text));
  });
  return 0;
}
