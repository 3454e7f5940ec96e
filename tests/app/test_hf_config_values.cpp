// config.json values out of range: every count below 1, any number that is not a finite float
// (1e300 would be inf), a negative or zero epsilon, theta or frequency factor, a value of the
// wrong kind, heads that do not divide the width, GPT-2's n_inner past 4 x n_embd in 32 bits,
// for both families, is an InputError naming config.json, the key, its line and column and
// the value (echoed escaped); nothing divides by zero or overflows. Through model.from, a
// cross-field rule the folder's values break names config.json, not the recipe.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "app/hf/hf_folder.h"
#include "kernels/base/errors.h"
#include "tests/app/test_recipe_util.h"

namespace trainer::testing {
namespace {

const std::string kLlama =
    R"("model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 32, )"
    R"("intermediate_size": 40, "vocab_size": 300, "max_position_embeddings": 48)";
const std::string kGpt2 =
    R"("model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 16, "vocab_size": 300, "n_positions": 24)";

// kLlama (or kGpt2) with `key`'s value replaced by `value`, or `value` appended when absent.
std::string with(const std::string& base, const std::string& key, const std::string& value) {
  const std::string quoted = "\"" + key + "\": ";
  const size_t at = base.find(quoted);
  if (at == std::string::npos) return "{" + base + ", " + quoted + value + "}";
  const size_t begin = at + quoted.size();
  const size_t end = base.find(',', begin);
  return "{" + base.substr(0, begin) + value + (end == std::string::npos ? "" : base.substr(end)) + "}";
}

std::string error_of(const std::string& text) {
  try {
    gpt_config_from_hf_json(text, "dir/config.json");
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not an InputError: ") + e.what() + ")";
  }
  return "(no error)";
}

struct ValueCase {
  std::string text;
  std::string fragment;
};

TEST_CASE("hf config.json: every value out of range is refused naming the key, place and value") {
  const std::string counts = "; valid: an integer from 1 to 2147483647";
  std::vector<ValueCase> cases;
  for (const char* key : {"num_hidden_layers", "num_attention_heads", "hidden_size", "intermediate_size",
                          "vocab_size", "max_position_embeddings", "num_key_value_heads", "head_dim"}) {
    cases.push_back({with(kLlama, key, "0"), "\"" + std::string(key) + "\" is 0" + counts});
    cases.push_back({with(kLlama, key, "-3"), "\"" + std::string(key) + "\" is -3" + counts});
    cases.push_back({with(kLlama, key, "2.5"), "\"" + std::string(key) + "\" is 2.5" + counts});
    cases.push_back({with(kLlama, key, "\"8\""), "\"" + std::string(key) + "\" is \"8\"" + counts});
    cases.push_back({with(kLlama, key, "2147483648"), "\"" + std::string(key) + "\" is 2147483648" + counts});
  }
  for (const char* key : {"n_layer", "n_head", "n_embd", "vocab_size", "n_positions", "n_inner"})
    cases.push_back({with(kGpt2, key, "0"), "\"" + std::string(key) + "\" is 0" + counts});
  const std::string positive = "; valid: a finite number above 0 within a float's range";
  for (const char* key : {"rms_norm_eps", "rope_theta"}) {
    cases.push_back({with(kLlama, key, "0"), "\"" + std::string(key) + "\" is 0" + positive});
    cases.push_back({with(kLlama, key, "-1e-5"), "\"" + std::string(key) + "\" is -1e-05" + positive});
    cases.push_back({with(kLlama, key, "1e300"), "\"" + std::string(key) + "\" is 1e+300" + positive});
    // Positive as a double, 0 as the float the model keeps (a fuzzer finding).
    cases.push_back({with(kLlama, key, "1e-50"), "\"" + std::string(key) + "\" is 1e-50" + positive});
    cases.push_back({with(kLlama, key, "1e999"), "\"" + std::string(key) + "\" is inf" + positive});
    cases.push_back({with(kLlama, key, "true"), "\"" + std::string(key) + "\" is a boolean" + positive});
  }
  cases.push_back({with(kGpt2, "layer_norm_epsilon", "-1"), "\"layer_norm_epsilon\" is -1" + positive});
  cases.push_back({with(kLlama, "rope_scaling", R"({"rope_type": "llama3", "factor": -8})"),
                   "\"factor\" is -8; valid: a finite number >= 0 within a float's range"});
  cases.push_back({with(kLlama, "rope_scaling", R"({"rope_type": "llama3", "factor": 8, "low_freq_factor": 0})"),
                   "\"low_freq_factor\" is 0" + positive});
  cases.push_back({with(kLlama, "rope_scaling", R"({"rope_type": "llama3", "factor": 8, "high_freq_factor": 4e38})"),
                   "\"high_freq_factor\" is 4e+38" + positive});
  cases.push_back(
      {with(kLlama, "rope_scaling", R"({"rope_type": "llama3", "original_max_position_embeddings": 0})"),
       "\"original_max_position_embeddings\" is 0" + counts});
  cases.push_back({with(kLlama, "rope_scaling", "[8]"), "\"rope_scaling\" is an array; valid: an object, or null"});
  cases.push_back({with(kLlama, "rope_scaling", "\"llama3\""), "\"rope_scaling\" is \"llama3\"; valid: an object"});
  cases.push_back({with(kLlama, "num_attention_heads", "3"),
                   "\"hidden_size\" 32 is not implemented; valid: a multiple of num_attention_heads 3"});
  // 4 x 2^29 is past int: the check must not overflow (UBSan) or accept a wrapped value.
  cases.push_back({R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 536870912, "vocab_size": 300, )"
                   R"("n_positions": 24, "n_inner": 2147483647})",
                   "\"n_inner\" 2147483647 is not implemented; valid: null or 4 x n_embd"});
  cases.push_back({with(kGpt2, "n_inner", "65"), "\"n_inner\" 65 is not implemented; valid: null or 4 x n_embd"});
  cases.push_back({with(kLlama, "hidden_act", "\"ge\\u001b[31mlu\\n\""),
                   "\"hidden_act\" ge\\x1b[31mlu\\x0a is not implemented; valid: silu"});
  cases.push_back({with(kLlama, "model_type", "\"lla\\u001bma\""), "model_type 'lla\\x1bma' is not implemented"});
  cases.push_back({"{\"model_type\": \"llama\"}", "dir/config.json: no \"num_hidden_layers\" (an integer >= 1)"});
  for (const ValueCase& c : cases) {
    CAPTURE(c.text);
    const std::string e = error_of(c.text);
    CAPTURE(e);
    CHECK(e.find("dir/config.json") == 0);
    CHECK(e.find(c.fragment) != std::string::npos);
    CHECK(e.find('\x1b') == std::string::npos);
  }
}

TEST_CASE("hf config.json: a value at the edge of its range is accepted") {
  CHECK(error_of(with(kLlama, "rms_norm_eps", "1e-30")) == "(no error)");
  CHECK(error_of(with(kLlama, "rope_scaling", R"({"rope_type": "llama3", "factor": 0})")) == "(no error)");
  CHECK(error_of(with(kLlama, "rope_scaling", "null")) == "(no error)");
  CHECK(error_of(with(kGpt2, "n_inner", "64")) == "(no error)");  // 4 x n_embd 16
  CHECK(error_of(with(kGpt2, "n_inner", "null")) == "(no error)");
  CHECK(gpt_config_from_hf_json(with(kGpt2, "n_embd", "536870912"), "c.json").d_model == 536870912);
}

TEST_CASE("hf model.from: a rule the folder's values break names config.json, not the recipe") {
  const std::string dir = scratch_dir("hf_from_values");
  write_text_file(dir + "/config.json", with(kLlama, "num_key_value_heads", "3"));
  const std::string e = load_error("model: {from: " + dir + "}\ndata: {train: \"x_*.bin\", tokenizer: byte}\n");
  CAPTURE(e);
  CHECK(e.find(dir + "/config.json: model.n_kv_head: 3 does not divide model.n_head 4") == 0);
}

}  // namespace
}  // namespace trainer::testing

namespace trainer::testing {
namespace {

TEST_CASE("hf config.json written: floats as their shortest text, token ids when known, and it reads back") {
  GptConfig c = gpt_config_from_hf_json("{" + kLlama + ", \"rms_norm_eps\": 1e-5, \"rope_theta\": 500000}", "in.json");
  c.init_std = 0.02f;
  const std::string plain = hf_config_json(c);
  CHECK(plain.find("\"rms_norm_eps\": 1e-05,") != std::string::npos);  // not 9.99999975e-06
  CHECK(plain.find("\"rope_theta\": 500000,") != std::string::npos);
  CHECK(plain.find("\"initializer_range\": 0.02,") != std::string::npos);  // not 0.019999999552965164
  CHECK(plain.find("bos_token_id") == std::string::npos);
  const std::string with_ids = hf_config_json(c, HfTokenIds{128000, 128001});
  CHECK(with_ids.find("\"bos_token_id\": 128000,\n  \"eos_token_id\": 128001,") != std::string::npos);
  const GptConfig again = gpt_config_from_hf_json(with_ids, "written");
  CHECK(again.norm_eps == c.norm_eps);
  CHECK(again.rope_theta == c.rope_theta);
  CHECK(hf_config_json(c, HfTokenIds{-1, 2}).find("\"eos_token_id\": 2") != std::string::npos);
}

}  // namespace
}  // namespace trainer::testing
