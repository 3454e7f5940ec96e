// Hugging Face tokenizer.json: ids equal those of Hugging Face's JavaScript implementation
// (tests/data/hf_*_reference.tsv, made by scripts/reference/hf_reference_ids.js) for Llama 3,
// Qwen 3 and Llama 2's files (fetched by scripts/fetch_data.sh --hf), round trips where the
// tokenizer is lossless, BOS/EOS from tokenizer_config.json and their overrides.
#include <doctest/doctest.h>

#include <filesystem>

#include "data/hf_tokenizer.h"
#include "data/tokenizer.h"
#include "data/unicode_normalize.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

std::string hf_dir(const std::string& name) {
  const std::string dir = source_dir() + "/datasets/hf/" + name;
  if (!std::filesystem::exists(dir + "/tokenizer.json"))
    FAIL("tokenizer.json missing in " << dir << ": run scripts/fetch_data.sh --hf first");
  return dir;
}

std::vector<ReferenceCase> reference_table(const std::string& name) {
  return read_reference_table(source_dir() + "/tests/data/hf_" + name + "_reference.tsv");
}

bool contains_added_token(const std::string& text) {
  for (const char* t : {"<s>", "</s>", "<unk>", "<|", "<think>", "</think>", "<tool", "</tool"})
    if (text.find(t) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("hf tokenizer: Llama 3 ids equal the reference's on the tricky-string table") {
  const auto tok = make_tokenizer(hf_dir("llama3"), "");
  CHECK(tok->vocab_size() == 128256);
  CHECK(tok->bos() == 128000);  // <|begin_of_text|>: tokenizer_config.json names it
  CHECK(tok->eos() == -1);
  int n = 0;
  for (const ReferenceCase& c : reference_table("llama3")) {
    INFO(c.comment);
    CHECK(tok->encode(c.text) == c.ids);
    CHECK(tok->decode(c.ids) == c.text);  // byte-level, no normalizer: lossless
    ++n;
  }
  CHECK(n >= 400);
}

TEST_CASE("hf tokenizer: Qwen 3 ids equal the reference's, round trip up to NFC") {
  const auto tok = make_tokenizer(hf_dir("qwen3"), "");
  CHECK(tok->vocab_size() == 151669);
  CHECK(tok->bos() == -1);  // no BOS: each document ends with eos_token <|im_end|>
  CHECK(tok->eos() == 151645);
  for (const ReferenceCase& c : reference_table("qwen3")) {
    INFO(c.comment);
    CHECK(tok->encode(c.text) == c.ids);
    if (!contains_added_token(c.text)) CHECK(tok->decode(c.ids) == unicode_normalize(c.text, NormalForm::nfc));
  }
}

TEST_CASE("hf tokenizer: Llama 2 ids equal the reference's, with metaspace and byte fallback") {
  const auto tok = make_tokenizer(hf_dir("llama2"), "");
  CHECK(tok->vocab_size() == 32000);
  CHECK(tok->bos() == 1);  // add_bos_token true, <s>
  CHECK(tok->eos() == -1);
  int fallback = 0;
  for (const ReferenceCase& c : reference_table("llama2")) {
    INFO(c.comment);
    CHECK(tok->encode(c.text) == c.ids);
    for (int32_t id : c.ids) fallback += id >= 3 && id < 259;  // <0x00>..<0xFF>
    // Lossless except for a literal U+2581 (decoded as a space) and added tokens (each
    // stretch after one gets its own prefix space).
    if (!contains_added_token(c.text) && c.text.find("\xE2\x96\x81") == std::string::npos)
      CHECK(tok->decode(c.ids) == c.text);
  }
  CHECK(fallback > 50);  // the table reaches the byte fallback
}

TEST_CASE("hf tokenizer: added tokens are matched in text, longest first") {
  const auto tok = make_tokenizer(hf_dir("llama3"), "");
  const std::vector<int32_t> ids = tok->encode("a<|end_of_text|><|begin_of_text|>");
  REQUIRE(ids.size() == 3);
  CHECK(ids[1] == 128001);
  CHECK(ids[2] == 128000);
  CHECK(tok->token_id("<|end_of_text|>") == 128001);
  CHECK(tok->token_id("Hello") == 9906);
  CHECK(tok->token_id("no such token") == -1);
}

TEST_CASE("hf tokenizer: BOS and EOS overrides, and their errors") {
  const std::string dir = hf_dir("qwen3");
  auto tok = make_tokenizer(dir, "", "--tokenizer", "none", "<|endoftext|>");
  CHECK(tok->bos() == -1);
  CHECK(tok->eos() == 151643);
  CHECK(tok->eot() == 151643);
  tok = make_tokenizer(dir, "", "--tokenizer", "<|im_start|>", "none");
  CHECK(tok->bos() == 151644);
  CHECK(tok->eos() == -1);
  CHECK_THROWS_WITH_AS(make_tokenizer(dir, "", "--tokenizer", "<nope>", "auto"),
                       doctest::Contains("--bos: the tokenizer has no token \"<nope>\""), ConfigError);
  auto gpt2 = make_tokenizer("byte", "", "--tokenizer", "auto", "<|endoftext|>");
  CHECK(gpt2->bos() == 256);
  CHECK(gpt2->eos() == 256);
}

TEST_CASE("hf tokenizer: a folder or a file path, and unknown names") {
  const std::string dir = hf_dir("llama2");
  CHECK(make_tokenizer(dir + "/tokenizer.json", "")->vocab_size() == 32000);
  CHECK_THROWS_WITH_AS(make_tokenizer("/nonexistent/tokenizer.json", "", "recipe.yaml:3:4: data.tokenizer"),
                       doctest::Contains("recipe.yaml:3:4: data.tokenizer: unknown tokenizer "
                                         "'/nonexistent/tokenizer.json': neither a name (valid: gpt2, byte)"),
                       ConfigError);
}

TEST_CASE("hf tokenizer: decode refuses ids outside the vocabulary") {
  const auto tok = make_tokenizer(hf_dir("llama2"), "");
  CHECK_THROWS_WITH_AS(tok->decode({5, 32000}), doctest::Contains("token id 32000 is not in the vocabulary"),
                       InputError);
  CHECK_THROWS_AS(tok->decode({-1}), InputError);
}
