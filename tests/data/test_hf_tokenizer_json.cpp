// tokenizer.json reading: a small hand-written file encodes as BPE should (merges, ignore_merges,
// unknown characters, byte fallback, fuse_unk, decoders), and every component, option or value
// trainer does not implement is refused naming the file, line, JSON path and what is valid; an
// id two tokens claim (vocab, added tokens, an added token displacing a token a merge or byte
// needs) is named as that conflict, with both tokens.
#include <doctest/doctest.h>

#include <array>
#include <string>
#include <vector>

#include "data/gpt2_vocab.h"
#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_spec.h"
#include "data/unicode_classes.h"
#include "kernels/base/errors.h"

using namespace trainer;

namespace {

// A SentencePiece-style file: vocab <unk> a b c ab abc ▁ ▁a <0x41>; merges a b, ab c, ▁ a.
std::string small_json(const std::string& model_extra = "", const std::string& top_extra = "") {
  return R"({"version": "1.0", "added_tokens": [{"id": 0, "content": "<unk>", "special": true,
  "normalized": false}],)" + top_extra + R"(
  "model": {"type": "BPE", "unk_token": "<unk>", )" + model_extra + R"(
    "vocab": {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "abc": 5, "▁": 6, "▁a": 7, "<0x41>": 8, "bc": 9},
    "merges": ["a b", "ab c", "▁ a"]}})";
}

HfTokenizer small(const std::string& model_extra = "", const std::string& top_extra = "") {
  return HfTokenizer(parse_hf_tokenizer_spec(small_json(model_extra, top_extra), "tok.json"));
}

std::string config_error(const std::string& json) {
  try {
    HfTokenizer t(parse_hf_tokenizer_spec(json, "tok.json"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("hf tokenizer json: BPE merges by rank, unknown characters, unk fusing") {
  using V = std::vector<int32_t>;
  CHECK(small().encode("abc") == V{5});
  CHECK(small().encode("ab") == V{4});
  CHECK(small().encode("bca") == V{2, 3, 1});     // no merge for b c: bc is never made
  CHECK(small().encode("axxb") == V{1, 0, 0, 2});  // unknown characters become <unk>
  CHECK(small("\"fuse_unk\": true,").encode("axxb") == V{1, 0, 2});
  CHECK(small("\"ignore_merges\": true,").encode("bc") == V{9});  // a whole-piece vocabulary hit
  CHECK(small("\"byte_fallback\": true,").encode("A") == V{8});  // <0x41>
  CHECK(small().encode("a<unk>b") == V{1, 0, 2});  // the added token is matched in the text
}

TEST_CASE("hf tokenizer json: normalizers, metaspace and the SentencePiece decoders") {
  const std::string top = R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend",
    "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"},
    "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ",
    "start": 1, "stop": 0}]},)";
  const HfTokenizer t = small("\"byte_fallback\": true,", top);
  CHECK(t.encode("a a") == std::vector<int32_t>{7, 7});
  CHECK(t.decode({7, 7}) == "a a");
  CHECK(t.decode({7, 8, 7}) == "aA a");  // byte fallback fused in; one leading space stripped
}

TEST_CASE("hf tokenizer json: a merge across a U+2581 boundary keeps the stretch whole") {
  // "a ▁" joins a letter to a following metaspace: word-by-word encoding would be wrong here.
  const std::string json = R"({"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    "model": {"type": "BPE", "vocab": {"a": 0, "▁": 1, "a▁": 2, "▁a": 3},
    "merges": ["a ▁", "▁ a"]}})";
  const HfTokenizer t(parse_hf_tokenizer_spec(json, "tok.json"));
  CHECK(t.encode(" a a") == std::vector<int32_t>{1, 2, 0});  // ▁ a▁ a, not ▁a ▁a
  const std::string split = R"({"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    "model": {"type": "BPE", "vocab": {"a": 0, "▁": 1, "▁a": 3}, "merges": ["▁ a"]}})";
  CHECK(HfTokenizer(parse_hf_tokenizer_spec(split, "tok.json")).encode(" a a") == std::vector<int32_t>{3, 3});
}

TEST_CASE("hf tokenizer json: the Digits pre-tokenizer isolates digits (SmolLM's files)") {
  auto with_digits = [](const char* individual) {
    return std::string(R"({"pre_tokenizer": {"type": "Digits", "individual_digits": )") + individual +
           R"(}, "model": {"type": "BPE", "vocab": {"1": 0, "2": 1, "12": 2, "a": 3, "a1": 4},
           "merges": ["1 2", "a 1"]}})";
  };
  const HfTokenizer each(parse_hf_tokenizer_spec(with_digits("true"), "tok.json"));
  CHECK(each.encode("a12") == std::vector<int32_t>{3, 0, 1});
  const HfTokenizer runs(parse_hf_tokenizer_spec(with_digits("false"), "tok.json"));
  CHECK(runs.encode("a12") == std::vector<int32_t>{3, 2});
}

TEST_CASE("hf tokenizer json: unimplemented components are refused with file, line and path") {
  auto with = [](const std::string& top) { return small_json("", top); };
  const char* cases[][2] = {
      {R"("normalizer": {"type": "Lowercase"},)",
       "tok.json:2:48: normalizer.type: the normalizer \"Lowercase\" is not implemented (implemented: "
       "Sequence, NFC, NFKC, Replace, Prepend)"},
      {R"("pre_tokenizer": {"type": "Whitespace"},)", "the pre-tokenizer \"Whitespace\" is not implemented"},
      {R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated"},)",
       "pre_tokenizer.pattern.Regex: the pattern \"\\d+\" uses the escape \\d"},
      {R"("pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed"},)",
       "pre_tokenizer.behavior: the Split behavior \"Removed\" is not implemented (implemented: Isolated)"},
      {R"("pre_tokenizer": {"type": "Metaspace", "split": true},)", "Metaspace with split true"},
      {R"("pre_tokenizer": {"type": "ByteLevel", "colour": 1},)",
       "pre_tokenizer.colour: the option \"colour\" of the ByteLevel pre-tokenizer is not implemented"},
      {R"("decoder": {"type": "WordPiece"},)", "the decoder \"WordPiece\" is not implemented"},
      {R"("normalizer": {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "},)",
       "normalizer.pattern.Regex: a Regex pattern is not implemented here"},
  };
  for (const auto& c : cases) {
    INFO(std::string(c[0]));
    CHECK_MESSAGE(config_error(with(c[0])).find(c[1]) != std::string::npos, config_error(with(c[0])));
  }
  CHECK(config_error(R"({"model": {"type": "WordPiece", "vocab": {}}})").find(
            "model.type: the model \"WordPiece\" is not implemented (implemented: BPE)") != std::string::npos);
  CHECK(config_error(R"({"added_tokens": [{"id": 0, "content": "x", "lstrip": true}], "model": {"type": "BPE", "vocab": {"x": 0}, "merges": []}})")
            .find("added_tokens[0].lstrip: added tokens with lstrip true are not implemented") != std::string::npos);
  CHECK(config_error(small_json("\"dropout\": 0.1,")).find("model.dropout: BPE dropout is not implemented") !=
        std::string::npos);
}

TEST_CASE("hf tokenizer json: malformed files are input errors naming the entry") {
  CHECK_THROWS_WITH_AS(parse_hf_tokenizer_spec("{\"model\": [}", "tok.json"), doctest::Contains("tok.json:1:12"),
                       InputError);
  CHECK_THROWS_WITH_AS(HfTokenizer(parse_hf_tokenizer_spec(
                           R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a a"]}})", "tok.json")),
                       doctest::Contains("tok.json: model.merges[0] (the merged token) \"aa\" is not in model.vocab"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_hf_tokenizer_spec(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}})",
                                               "tok.json"),
                       doctest::Contains("model.merges[0]: \"a\" is not two tokens"), InputError);
  CHECK_THROWS_WITH_AS(parse_hf_tokenizer_spec(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})",
                                               "tok.json"),
                       doctest::Contains("model.vocab: the id of \"a\""), InputError);
}

namespace {

// The InputError a tokenizer.json built from `json` raises, or "(no error)".
std::string input_error(const std::string& json) {
  try {
    HfTokenizer t(parse_hf_tokenizer_spec(json, "tok.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// A BPE file with vocab {a: 0, b: 1, ab: 2, c: 3}, merge "a b", and the added tokens given.
std::string with_added(const std::string& added, const std::string& vocab_extra = "") {
  return R"({"added_tokens": [)" + added + R"(], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3)" +
         vocab_extra + R"(}, "merges": ["a b"]}})";
}

}  // namespace

TEST_CASE("hf tokenizer json: each id conflict is named as what it is, with both tokens") {
  struct Row {
    const char* what;
    std::string json;
    std::string says;
  };
  // A byte-level file: every byte's stand-in character at the byte's id, and an added token
  // that takes the id of 'A' (65).
  std::string byte_level =
      R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
          "added_tokens": [{"id": 65, "content": "<|x|>", "special": true, "normalized": false}],
          "model": {"type": "BPE", "vocab": {)";
  const std::array<uint32_t, 256> stand_in = gpt2_byte_to_codepoint();
  for (int b = 0; b < 256; ++b) {
    std::string token;
    append_utf8(stand_in[size_t(b)], &token);
    if (token == "\"" || token == "\\") token = "\\" + token;
    byte_level += (b ? ", \"" : "\"") + token + "\": " + std::to_string(b);
  }
  byte_level += "}, \"merges\": []}}";
  const std::vector<Row> rows = {
      {"an added token takes a merge's token id",
       with_added(R"({"id": 2, "content": "<|x|>", "special": true, "normalized": false})"),
       "tok.json: model.merges[0] (the merged token) needs \"ab\", id 2 in model.vocab, but added_tokens[0] \"<|x|>\" "
       "takes that id with other content; valid: an added token with an id of its own"},
      {"an added token takes a merge's part",
       with_added(R"({"id": 1, "content": "<|y|>", "special": true, "normalized": false})"),
       "model.merges[0] needs \"b\", id 1 in model.vocab, but added_tokens[0] \"<|y|>\" takes that id"},
      {"two added tokens, one id",
       with_added(R"({"id": 4, "content": "<s>", "special": true, "normalized": false},
                    {"id": 4, "content": "</s>", "special": true, "normalized": false})"),
       "tok.json: added_tokens[1] \"</s>\" has the id 4 of added_tokens[0] \"<s>\"; valid: one id per added token"},
      {"two vocab tokens, one id", with_added("", R"(, "d": 3)"),
       "tok.json: model.vocab: the id 3 belongs to two tokens, \"c\" and \"d\"; valid: one id per token"},
      {"a vocab token with a control character, one id", with_added("", R"(, "d\u001b": 3)"),
       "the id 3 belongs to two tokens, \"c\" and \"d\\x1b\""},
      {"an added token takes a byte's id", byte_level,
       "tok.json: the byte 0x41 needs \"A\", id 65 in model.vocab, but added_tokens[0] \"<|x|>\" takes that id"},
      {"a merge of a token not in the vocabulary",
       R"({"model": {"type": "BPE", "vocab": {"a": 0, "aa": 1}, "merges": ["a q\u0007"]}})",
       "tok.json: model.merges[0] \"q\\x07\" is not in model.vocab"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    const std::string e = input_error(row.json);
    CAPTURE(e);
    CHECK(e.find(row.says) != std::string::npos);
  }
  // The same id again with the same content is how real files repeat their specials: fine.
  CHECK(input_error(with_added(R"({"id": 2, "content": "ab", "special": true, "normalized": false},
                                  {"id": 2, "content": "ab", "special": true, "normalized": false})")) == "(no error)");
}
