// model.from: DIR: a recipe without model keys takes every one from the folder's config.json
// (llama with rope scaling, gpt2), and the result passes the check model.init_from makes; keys
// the recipe sets that agree are fine, every one that disagrees is listed with where the
// recipe sets it (a --set too) and both values; n_kv_head 0 is compared as n_head; a path
// that is not an HF folder is named.
#include <doctest/doctest.h>

#include <filesystem>

#include "app/engine/options_from.h"
#include "app/hf/hf_folder.h"
#include "tests/app/test_recipe_util.h"
#include "tests/support/tiny_gpt.h"

namespace trainer::testing {
namespace {

// A folder with only config.json (model.from reads nothing else) describing `c`.
std::string config_folder(const std::string& name, const GptConfig& c) {
  const std::string dir = scratch_dir(name);
  write_text_file(dir + "/config.json", hf_config_json(c));
  return dir;
}

GptConfig folder_llama() {
  GptConfig c = gpt_config(3, 4, 32, 300, 300, 48);
  c.arch = llama_family().arch;
  c.n_kv_head = 2;
  c.ffn_dim = 40;
  c.norm_eps = 1e-6f;
  c.rope_theta = 500000.0f;
  c.tie = TiedEmbeddings::untied;
  c.rope_scaling.factor = 8.0f;
  c.rope_scaling.low_freq_factor = 2.0f;
  c.rope_scaling.high_freq_factor = 6.0f;
  c.rope_scaling.original_context = 16;
  return c;
}

const char* kData = "data: {train: \"shards/train_*.bin\", tokenizer: byte}\n";

TEST_CASE("hf model.from: a llama folder gives every model key, and init_from's check then passes") {
  const GptConfig f = folder_llama();
  const std::string dir = config_folder("hf_from_llama", f);
  const Recipe r = load_recipe_text("model: {from: " + dir + "}\n" + kData);
  CHECK(r.model.arch == llama_family().arch);
  CHECK(r.model.n_layer == 3);
  CHECK(r.model.n_head == 4);
  CHECK(r.model.n_kv_head == 2);
  CHECK(r.model.d_model == 32);
  CHECK(r.model.ffn_dim == 40);
  CHECK(r.model.vocab_size == 300);
  CHECK(r.model.seq_len == 48);
  CHECK(r.train.seq_len == 48);  // defaults to the model's context, taken from the folder
  CHECK(r.model.norm_eps == 1e-6f);
  CHECK(r.model.rope_theta == 500000.0f);
  CHECK(!r.model.tie_embeddings);
  CHECK(r.model.rope_scaling.factor == 8.0f);
  CHECK(r.model.rope_scaling.low_freq_factor == 2.0f);
  CHECK(r.model.rope_scaling.high_freq_factor == 6.0f);
  CHECK(r.model.rope_scaling.original_context == 16);
  // What model.init_from: DIR checks at start-up holds for the recipe model.from wrote.
  CHECK_NOTHROW(check_hf_config(r.path, dir, gpt_config_from_hf(dir), gpt_config_from(r)));
}

TEST_CASE("hf model.from: a gpt2 folder, with agreeing keys the recipe sets") {
  const GptConfig f = gpt_config(2, 2, 16, 300, 300, 24);
  const std::string dir = config_folder("hf_from_gpt2", f);
  const Recipe r = load_recipe_text("model: {from: " + dir + ", n_layer: 2, vocab_multiple: 32}\n" + kData);
  CHECK(r.model.arch == gpt2_family().arch);
  CHECK(r.model.n_layer == 2);
  CHECK(r.model.d_model == 16);
  CHECK(r.model.vocab_size == 300);
  CHECK(r.model.seq_len == 24);
  CHECK(r.padded_vocab() == 320);  // vocab_multiple stays the recipe's
  CHECK_NOTHROW(check_hf_config(r.path, dir, gpt_config_from_hf(dir), gpt_config_from(r)));
}

TEST_CASE("hf model.from: n_kv_head 0 means n_head, so it agrees with a folder without grouped heads") {
  GptConfig f = folder_llama();
  f.n_kv_head = f.n_head;
  const std::string dir = config_folder("hf_from_kv0", f);
  const Recipe r = load_recipe_text("model: {from: " + dir + ", n_kv_head: 0}\n" + kData);
  CHECK(gpt_config_from(r).kv_heads() == 4);
  const std::string e = load_error("model: {from: " + config_folder("hf_from_kv2", folder_llama()) + ", n_kv_head: 0}\n" + kData);
  CHECK(e.find("model.n_kv_head: recipe 0 (= n_head 4) (") != std::string::npos);
  CHECK(e.find("folder 2") != std::string::npos);
}

TEST_CASE("hf model.from: every key that disagrees with the folder is listed, with where it is set") {
  const std::string dir = config_folder("hf_from_mismatch", folder_llama());
  const std::string e = load_error("model:\n  from: " + dir + "\n  n_layer: 5\n  d_model: 32\n  ffn_dim: 64\n" + kData,
                                   {"model.rope_theta=10000"});
  CHECK(e.find("r.yaml:2:9: model.from \"" + dir + "\" (" + dir + "/config.json) disagrees") != std::string::npos);
  CHECK(e.find("model.n_layer: recipe 5 (") != std::string::npos);
  CHECK(e.find("r.yaml:3:12), folder 3") != std::string::npos);
  CHECK(e.find("model.ffn_dim: recipe 64 (") != std::string::npos);
  CHECK(e.find("r.yaml:5:12), folder 40") != std::string::npos);
  CHECK(e.find("model.rope_theta: recipe 10000 (--set model.rope_theta=10000), folder 500000") != std::string::npos);
  CHECK(e.find("model.d_model") == std::string::npos);  // 32 agrees
  CHECK(e.find("valid: leave these keys out") != std::string::npos);
}

TEST_CASE("hf model.from: a path without config.json is named") {
  const std::string dir = scratch_dir("hf_from_empty");
  const std::string e = load_error("model: {from: " + dir + "}\n" + kData);
  CHECK(e.find("model.from \"" + dir + "\" is not a Hugging Face model folder (no " + dir + "/config.json)") !=
        std::string::npos);
  CHECK(e.find("r.yaml:1:15") != std::string::npos);
}

}  // namespace
}  // namespace trainer::testing
