// In-process tests of load_recipe, --set overrides, check_layout and recipe_to_yaml.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "app/recipe/recipe.h"
#include "app/recipe/recipe_schema.h"
#include "kernels/base/errors.h"
#include "tests/app/test_recipe_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

std::string roundtrip_yaml(const Recipe& recipe) {
  std::string path = write_recipe("recipe_roundtrip", "again.yaml", recipe_to_yaml(recipe));
  return recipe_to_yaml(load_recipe(path, {}));
}

}  // namespace

TEST_CASE("a recipe with only data.train gets every default and a resolved seq_len") {
  Recipe r = load_recipe_text("data: {train: \"shards/train_*.bin\"}\n");
  const Recipe d;
  CHECK(r.data.train == single_source("shards/train_*.bin"));
  CHECK(r.model.n_layer == d.model.n_layer);
  CHECK(r.model.d_model == 768);
  CHECK(r.model.vocab_size == 50257);
  CHECK(r.padded_vocab() == 50304);
  CHECK(r.train.seq_len == 1024);  // 0 resolves to model.seq_len
  CHECK(r.train.optimizer.beta1 == 0.9);
  CHECK(r.train.optimizer.beta2 == 0.95);
  CHECK(r.train.lr_schedule.kind == LrKind::cosine);
  CHECK(r.parallel.schedule == Schedule::one_f_one_b);
  CHECK(r.checkpoint.resume == "auto");
  CHECK(r.log.sample_prompt == "\n");
  CHECK(r.grad_accum() == 1);
  CHECK(r.path.find("r.yaml") != std::string::npos);
}

TEST_CASE("every value kind is read into its field") {
  Recipe r = load_recipe_text(
      "model: {n_layer: 4, n_head: 4, d_model: 64, seq_len: 32, vocab_size: 257, init_std: 0.01}\n"
      "parallel: {data: 2, pipeline: 2, stages: [1, 3], schedule: gpipe, zero: 2, bucket_mb: 2.5,\n"
      "           grad_reduce_dtype: bf16}\n"
      "train:\n"
      "  device: cpu\n  precision: fp32\n  micro_batch: 2\n  global_batch: 8\n  seq_len: 16\n"
      "  seed: 18446744073709551615\n  recompute: block\n  stochastic_rounding: false\n"
      "  optimizer: {lr: 3.0e-4, betas: [0.8, 0.99], eps: 1e-6, weight_decay: 0, grad_clip: 0}\n"
      "  lr_schedule: {kind: wsd, warmup_steps: 5, min_lr_ratio: 0, decay_fraction: 1}\n"
      "data: {train: a, tokenizer: byte}\n"
      "log: {sample_prompt: 'It was'}\n");
  CHECK(r.model.init_std == doctest::Approx(0.01f));
  CHECK(r.parallel.stages == std::vector<int>{1, 3});
  CHECK(r.parallel.schedule == Schedule::gpipe);
  CHECK(r.parallel.bucket_mb == 2.5);
  CHECK(r.parallel.grad_reduce_dtype == GradReduceDType::bf16);
  CHECK(load_recipe_text("data: {train: a}\n").parallel.grad_reduce_dtype == GradReduceDType::fp32);
  CHECK(r.train.device == DeviceChoice::cpu);
  CHECK(r.train.precision == PrecisionChoice::fp32);
  CHECK(r.train.seed == 18446744073709551615ull);
  CHECK(r.train.recompute == Recompute::block);
  CHECK_FALSE(r.train.stochastic_rounding);
  CHECK(r.train.optimizer.lr == 3.0e-4);
  CHECK(r.train.optimizer.beta1 == 0.8);
  CHECK(r.train.optimizer.beta2 == 0.99);
  CHECK(r.train.lr_schedule.kind == LrKind::wsd);
  CHECK(r.train.lr_schedule.decay_fraction == 1.0);
  CHECK(r.data.tokenizer == "byte");
  CHECK(r.log.sample_prompt == "It was");
  CHECK(r.grad_accum() == 2);  // 8 / (2 x 2)
  CHECK(r.world() == 4);
}

TEST_CASE("--set overrides file values, parses YAML, and is checked like the file") {
  const std::string base = "data: {train: x}\nparallel: {data: 2}\ntrain: {micro_batch: 2, global_batch: 4}\n";
  Recipe r = load_recipe_text(base, {"train.optimizer.betas=[0.9,0.99]", "train.steps=7",
                                     "data.train=other/*.bin", "train.optimizer={lr: 0.01, eps: 1e-5}",
                                     "log.sample_prompt='quoted: yes'", "train.micro_batch=1"});
  CHECK(r.train.optimizer.beta2 == 0.99);
  CHECK(r.train.steps == 7);
  CHECK(r.data.train == single_source("other/*.bin"));  // a string key takes the text literally
  CHECK(r.train.optimizer.lr == 0.01);
  CHECK(r.train.optimizer.eps == 1e-5);
  CHECK(r.log.sample_prompt == "quoted: yes");
  CHECK(r.grad_accum() == 2);
  // The last --set wins, and cross-field checks run after all overrides.
  CHECK(load_recipe_text(base, {"train.steps=3", "train.steps=9"}).train.steps == 9);
  CHECK(load_recipe_text("data: {train: x}\nparallel: {data: 2}\n", {"train.global_batch=8"})
            .train.global_batch == 8);
  // A required key may come from --set alone.
  CHECK(load_recipe_text("model: {n_layer: 2}\n", {"data.train=t.bin"}).data.train == single_source("t.bin"));

  CHECK(load_error(base, {"train.micro_batch=0"}) ==
        "--set train.micro_batch=0: train.micro_batch: 0 is out of range; valid: integer >= 1");
  CHECK(load_error(base, {"train.micro_batch=two"}).find("expected an integer, got two") !=
        std::string::npos);
  CHECK(load_error(base, {"train.stepz=3"}).find("unknown key train.stepz; did you mean train.steps?") !=
        std::string::npos);
  CHECK(load_error(base, {"train.optimizer.betas=[0.9]"}).find("got a list of 1 element") !=
        std::string::npos);
  CHECK(load_error(base, {"train.device=gpu"}).find("unknown value \"gpu\"") != std::string::npos);
  CHECK(load_error(base, {"steps"}).find("expected section.key=value") != std::string::npos);
  CHECK(load_error(base, {"train.steps=[1,"}).find("the value is not valid YAML") != std::string::npos);
  CHECK(load_error(base, {"train.steps="}).find("no value given") != std::string::npos);
}

TEST_CASE("load errors carry file, line and column of the offending value") {
  std::string msg = load_error("data: {train: x}\ntrain:\n  steps: 10\n  micro_batch: -3\n");
  CHECK(msg.find("r.yaml:4:16: train.micro_batch: -3 is out of range; valid: integer >= 1") !=
        std::string::npos);
  msg = load_error("data: {train: x}\ntrain:\n  optimizer:\n    betas: [0.5, 1.5]\n");
  CHECK(msg.find("r.yaml:4:18: train.optimizer.betas: 1.5 is out of range") != std::string::npos);
  msg = load_error("data: {train: x}\nparallel:\n  tensor: 5\n");
  CHECK(msg.find("r.yaml:3:11: parallel.tensor: 5 does not divide model.n_head 12") != std::string::npos);
  CHECK(msg.find("1, 2, 3, 4, 6, 12") != std::string::npos);
  // A cross-field error on a key left at its default names the file only.
  msg = load_error("data: {train: x}\nmodel: {n_head: 7}\n");
  CHECK(msg.find("r.yaml: model.d_model: 768 is not divisible by model.n_head 7") != std::string::npos);
}

TEST_CASE("check_layout requires data x tensor x pipeline == world") {
  Recipe r = load_recipe_text("data: {train: x}\nparallel: {data: 2, tensor: 2}\ntrain: {global_batch: 8}\n");
  CHECK_NOTHROW(check_layout(r, 4));
  try {
    check_layout(r, 8);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("parallel: data 2 x tensor 2 x pipeline 1 = 4 ranks, but the "
                                     "job has 8; set the degrees so their product is 8") !=
          std::string::npos);
  }
  CHECK_THROWS_AS(check_layout(r, 0), ConfigError);
  CHECK_NOTHROW(check_layout(load_recipe_text("data: {train: x}\n"), 1));
}

TEST_CASE("recipe_to_yaml prints every key and loads back to the same recipe") {
  Recipe r = load_recipe_text(
      "data: {train: \"we*ird: 'glob' \\\"x\\\" \\\\ é\", val: v}\n"
      "log: {sample_prompt: \"line1\\nline2\\ttab\\u0001\"}\n"
      "train: {optimizer: {lr: 0.000123456789, eps: 1.0e-12}, seed: 12345678901234}\n"
      "model: {init_std: 0.0123}\n");
  std::string yaml = recipe_to_yaml(r);
  const std::string model_section = yaml.substr(0, yaml.find("\nparallel:"));
  for (const KeySpec& k : recipe_schema()) {
    std::string leaf = k.path.substr(k.path.rfind('.') + 1);
    if (key_applies(k, r)) {
      CHECK_MESSAGE(yaml.find(leaf + ": ") != std::string::npos, k.path);
    } else {
      // gpt2 recipes leave out the llama keys (all in the model section), which they may not set.
      CHECK_MESSAGE(model_section.find(" " + leaf + ": ") == std::string::npos, k.path);
    }
  }
  CHECK(roundtrip_yaml(r) == yaml);
  Recipe again = load_recipe(write_recipe("recipe_roundtrip2", "a.yaml", yaml), {});
  CHECK(again.data.train == r.data.train);
  CHECK(again.log.sample_prompt == "line1\nline2\ttab\x01");
  CHECK(again.train.optimizer.lr == r.train.optimizer.lr);
  CHECK(again.train.optimizer.eps == 1.0e-12);
  CHECK(again.train.seed == 12345678901234ull);
  CHECK(again.model.init_std == r.model.init_std);
}

TEST_CASE("every shipped config round-trips through recipe_to_yaml") {
  int count = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(source_dir() + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    Recipe r = load_recipe(entry.path().string(), {});
    CHECK(roundtrip_yaml(r) == recipe_to_yaml(r));
    ++count;
  }
  CHECK(count >= 5);
}

TEST_CASE("every choice name maps to a distinct value and prints back") {
  for (const KeySpec& k : recipe_schema()) {
    for (const std::string& choice : k.choices) {
      INFO(k.path << " = " << choice);
      // With a checkpoint directory: train.on_nonfinite rollback needs one; interleaved needs
      // stages, chunks and whole groups of micro-batches.
      std::vector<std::string> sets = {k.path + "=" + choice};
      if (choice == "interleaved")
        for (const char* more : {"parallel.pipeline=2", "parallel.virtual_stages=2", "train.micro_batch=1",
                                 "train.global_batch=4"})
          sets.push_back(more);
      Recipe r = load_recipe_text("data: {train: x}\ncheckpoint: {dir: y}\n", sets);
      CHECK(key_value_yaml(k, r) == choice);
    }
  }
}
