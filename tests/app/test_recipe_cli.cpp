// `trainer validate` end to end: every shipped config passes, and a table of bad recipes each
// exits with code 2 and the expected message (with file:line:column where there is one).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/app/test_recipe_util.h"
#include "tests/support/trainer_binary.h"

using namespace trainer::testing;

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct BadRecipe {
  const char* name;
  std::string text;                // written to bad.yaml
  std::vector<std::string> args;   // after the recipe path
  std::string expected;            // substring of the output; "bad.yaml:" = the file + position
};

const std::string kData = "data: {train: x}\n";

std::vector<BadRecipe> bad_recipes() {
  return {
      {"typo in a key", kData + "model:\n  n_layers: 3\n", {},
       "bad.yaml:3:3: unknown key \"n_layers\" in section model; did you mean model.n_layer?"},
      {"dotted key", kData + "train.steps: 5\n", {},
       "bad.yaml:2:1: key \"train.steps\" contains a dot; write sections as nested maps"},
      {"key in the wrong section", kData + "train:\n  lr: 3\n", {},
       "bad.yaml:3:3: unknown key \"lr\" in section train; did you mean train.optimizer.lr?"},
      {"unknown section", kData + "modle: {n_layer: 2}\n", {},
       "bad.yaml:2:1: unknown key \"modle\" in the top level; did you mean model?"},
      {"negative integer", kData + "train:\n  micro_batch: -3\n", {},
       "bad.yaml:3:16: train.micro_batch: -3 is out of range; valid: integer >= 1"},
      {"float where integer", kData + "train:\n  steps: 1.5\n", {},
       "bad.yaml:3:10: train.steps: 1.5 is not a whole number; valid: integer >= 1"},
      {"quoted string where integer", kData + "model: {n_layer: \"12\"}\n", {},
       "bad.yaml:2:18: model.n_layer: expected an integer, got the quoted string \"12\""},
      {"word where number", kData + "train: {optimizer: {lr: fast}}\n", {},
       "bad.yaml:2:25: train.optimizer.lr: expected a number, got fast; valid: number > 0"},
      {"list where integer", kData + "train: {steps: [1, 2]}\n", {},
       "bad.yaml:2:16: train.steps: expected an integer, got a list"},
      {"list where map", kData + "train:\n  optimizer: [1, 2]\n", {},
       "bad.yaml:3:14: train.optimizer is a section and takes a map of keys, got a list"},
      {"value where map", "train: 5\n" + kData, {},
       "bad.yaml:1:8: train is a section and takes a map of keys, got the value 5"},
      {"unknown choice", kData + "train: {precision: fp16}\n", {},
       "bad.yaml:2:20: train.precision: unknown value \"fp16\" (did you mean fp32?); valid: one "
       "of: auto, fp32, bf16"},
      {"choice in the wrong case", kData + "parallel: {schedule: 1F1B}\n", {},
       "bad.yaml:2:22: parallel.schedule: unknown value \"1F1B\" (did you mean 1f1b?)"},
      {"unknown architecture", kData + "model: {arch: mamba}\n", {},
       "bad.yaml:2:15: model.arch: unknown value \"mamba\"; valid: one of: gpt2, llama"},
      {"llama: n_kv_head must divide n_head", kData + "model: {arch: llama, n_head: 4, d_model: 32, n_kv_head: 3}\n",
       {}, "bad.yaml:2:57: model.n_kv_head: 3 does not divide model.n_head 4"},
      {"llama: d_model must divide into heads", kData + "model: {arch: llama, n_head: 4, d_model: 30}\n", {},
       "bad.yaml:2:42: model.d_model: 30 is not divisible by model.n_head 4"},
      {"llama: odd head size", kData + "model: {arch: llama, n_head: 4, d_model: 36}\n", {},
       "bad.yaml:2:42: model.d_model: 36 / model.n_head 4 = head size 9, which is odd"},
      {"gpt2: rope scaling keys without rope", kData + "model: {rope_scaling: {factor: 8}}\n", {},
       "bad.yaml:2:9: model.rope_scaling: applies to model.arch llama only, and model.arch is gpt2"},
      {"gpt2: grouped-query key", kData + "model: {n_kv_head: 2}\n", {},
       "bad.yaml:2:20: model.n_kv_head: applies to model.arch llama only"},
      {"llama: rope scaling key without a factor", kData + "model: {arch: llama, rope_scaling: {low_freq_factor: 2}}\n",
       {}, "bad.yaml:2:54: model.rope_scaling.low_freq_factor: is set but model.rope_scaling.factor is 0"},
      {"llama: rope scaling factor below one", kData + "model: {arch: llama, rope_scaling: {factor: 0.5}}\n", {},
       "bad.yaml:2:45: model.rope_scaling.factor: 0.5 would shorten the wavelengths"},
      {"llama: tensor degree must divide the k/v heads",
       kData + "model: {arch: llama, n_head: 4, d_model: 32, n_kv_head: 1}\nparallel: {tensor: 2}\n", {},
       "bad.yaml:3:20: parallel.tensor: 2 does not divide model.n_kv_head 1"},
      {"llama: no llm.c files", kData + "model: {arch: llama, init_from: gpt2.bin}\n", {},
       "model.init_from: \"gpt2.bin\": llm.c model files hold GPT-2 weights only"},
      {"yes is not a boolean", kData + "train: {stochastic_rounding: yes}\n", {},
       "bad.yaml:2:30: train.stochastic_rounding: expected true or false, got yes"},
      {"explicit tag", kData + "train: {steps: !!int 5}\n", {},
       "bad.yaml:2:16: train.steps: explicit YAML tag tag:yaml.org,2002:int is not supported"},
      {"integer overflow", kData + "train: {steps: 99999999999}\n", {},
       "bad.yaml:2:16: train.steps: 99999999999 is out of range"},
      {"negative seed", kData + "train: {seed: -1}\n", {},
       "bad.yaml:2:15: train.seed: expected a non-negative integer, got -1"},
      {"zero out of range", kData + "parallel: {zero: 4}\n", {},
       "bad.yaml:2:18: parallel.zero: 4 is out of range; valid: integer in [0, 3]"},
      {"learning rate zero", kData + "train: {optimizer: {lr: 0}}\n", {},
       "bad.yaml:2:25: train.optimizer.lr: 0 is out of range; valid: number > 0"},
      {"beta out of range", kData + "train: {optimizer: {betas: [0.9, 1.0]}}\n", {},
       "bad.yaml:2:34: train.optimizer.betas: 1.0 is out of range; valid: list of 2 numbers, each in [0, 1)"},
      {"betas of wrong length", kData + "train: {optimizer: {betas: [0.9, 0.95, 0.99]}}\n", {},
       "bad.yaml:2:28: train.optimizer.betas: got a list of 3 elements"},
      {"min_lr_ratio above 1", kData + "train: {lr_schedule: {min_lr_ratio: 1.5}}\n", {},
       "bad.yaml:2:37: train.lr_schedule.min_lr_ratio: 1.5 is out of range; valid: number in [0, 1]"},
      {"wsd decay fraction 0", kData + "train: {lr_schedule: {kind: wsd, decay_fraction: 0}}\n", {},
       "train.lr_schedule.decay_fraction: 0 is out of range; valid: number in (0, 1]"},
      {"empty value", kData + "train:\n  steps:\n", {},
       "bad.yaml:3:3: train.steps: no value given; valid: integer >= 1"},
      {"empty required string", "data: {train: \"\"}\n", {},
       "bad.yaml:1:15: data.train: the value is empty; valid: a non-empty glob, or a list of"},
      {"duplicate key", kData + "train:\n  steps: 5\n  steps: 6\n", {},
       "bad.yaml:4:3: duplicate key train.steps (first set at line 3)"},
      {"duplicate section", kData + "eval: {every: 0}\neval: {every: 0}\n", {},
       "bad.yaml:3:1: duplicate key eval (first set at line 2)"},
      {"key that is not a name", kData + "? [a, b]\n: 1\n", {},
       "bad.yaml:2:3: a key must be a name, not a list"},
      {"empty file", "", {}, "bad.yaml: the recipe is empty"},
      {"only comments", "# nothing here\n\n", {}, "bad.yaml: the recipe is empty"},
      {"YAML syntax error", "data: {train: x\nmodel: {}\n", {}, "bad.yaml:2:6: YAML syntax error: end of map flow not found"},
      {"bad indentation", "data:\n  train: x\n   val: y\n", {}, "bad.yaml:3:7: YAML syntax error"},
      {"not UTF-8", kData + "train: {steps: 5}\n# caf\xe9\n", {},
       "bad.yaml:3:6: byte 0xe9 is not valid UTF-8"},
      {"control character", kData + "train: {steps: \x01}\n", {},
       "bad.yaml:2:16: byte 0x01 is a control character"},
      {"two documents", kData + "---\nmodel: {}\n", {}, "bad.yaml:3:1: a second YAML document starts here"},
      // Found by fuzz_recipe: yaml-cpp's LoadAll never returned on these (a stray top-level ',').
      {"stray comma", "# a comment\n,1\n", {}, "bad.yaml:2:1: YAML syntax error: unexpected ','"},
      {"comma after a flow map", "{data: {train: x}},\n", {}, "bad.yaml:1:19: YAML syntax error: unexpected ','"},
      {"first key indented more than the next", "  data: {train: x}\n model: {n_layer: 3}\n", {},
       "bad.yaml:2:2: a second YAML document starts here"},
      {"a list, not a map", "- data\n- model\n", {},
       "bad.yaml:1:1: a recipe is a map of sections (model, parallel, train, data, eval, checkpoint, log), got a list"},
      {"missing data section", "model: {n_layer: 2}\n", {},
       "bad.yaml: section data is missing; data.train is required"},
      {"missing required key", "data: {val: v}\n", {},
       "bad.yaml:1:1: section data lacks the required key data.train"},
      {"d_model not divisible by n_head", kData + "model: {n_head: 12, d_model: 100}\n", {},
       "bad.yaml:2:30: model.d_model: 100 is not divisible by model.n_head 12; valid: a multiple of 12 (e.g. 96 or 108)"},
      {"vocab too small for tokenizer", kData + "model: {vocab_size: 1000}\n", {},
       "bad.yaml:2:21: model.vocab_size: 1000 is smaller than the gpt2 tokenizer's 50257 token ids"},
      {"n_head not divisible by tensor", kData + "parallel: {tensor: 5}\n", {},
       "bad.yaml:2:20: parallel.tensor: 5 does not divide model.n_head 12; valid: a divisor of 12 (1, 2, 3, 4, 6, 12)"},
      {"padded vocab not divisible by tensor", kData + "model: {n_head: 10, d_model: 640}\nparallel: {tensor: 5}\n", {},
       "parallel.tensor: 5 does not divide the padded vocabulary 50304"},
      {"more stages than layers", kData + "model: {n_layer: 2}\nparallel: {pipeline: 3}\n", {},
       "bad.yaml:3:22: parallel.pipeline: 3 stages but model.n_layer is 2; valid: at most 2"},
      {"stages of wrong count", kData + "parallel: {pipeline: 2, stages: [12]}\n", {},
       "parallel.stages: 1 entries but parallel.pipeline is 2"},
      {"stages of wrong sum", kData + "parallel: {pipeline: 2, stages: [5, 6]}\n", {},
       "bad.yaml:2:33: parallel.stages: the entries sum to 11 but model.n_layer is 12"},
      {"zero 3 with pipelining", kData + "parallel: {pipeline: 2, zero: 3}\n", {},
       "bad.yaml:2:31: parallel.zero: zero: 3 with pipeline > 1 is not supported; use zero 1 or 2 with pipelining"},
      {"sequence parallel without tensor parallel", kData + "parallel: {sequence_parallel: true}\n", {},
       "bad.yaml:2:31: parallel.sequence_parallel: true needs tensor parallelism but parallel.tensor is 1"},
      {"sequence parallel rows not divisible", kData + "parallel: {tensor: 4, sequence_parallel: true}\n",
       {"--set", "train.micro_batch=1", "--set", "train.seq_len=6"},
       "parallel.sequence_parallel: true splits the 1 x 6 = 6 rows of a micro-batch over parallel.tensor 4"},
      {"global batch not a multiple", kData + "parallel: {data: 2}\ntrain: {micro_batch: 3, global_batch: 10}\n", {},
       "bad.yaml:3:39: train.global_batch: 10 is not a multiple of train.micro_batch 3 x parallel.data 2 = 6; valid: a multiple of 6 (e.g. 6 or 12)"},
      {"train seq_len above model seq_len", kData + "train: {seq_len: 2048}\n", {},
       "bad.yaml:2:18: train.seq_len: 2048 exceeds model.seq_len 1024"},
      {"bf16 on cpu", kData + "train: {device: cpu, precision: bf16}\n", {},
       "train.precision: bf16 needs train.device cuda (bf16 is CUDA-only here)"},
      {"cuda attention on cpu", kData + "train: {device: cpu, attention: cudnn}\n", {},
       "train.attention: cudnn is a CUDA kernel but train.device is cpu"},
      {"eval without validation data", kData + "eval: {every: 10}\n", {},
       "bad.yaml:2:15: eval.every: 10 needs validation shards but data.val is empty"},
      {"checkpoints without a directory", kData + "checkpoint: {every: 100}\n", {},
       "bad.yaml:2:21: checkpoint.every: 100 needs a directory but checkpoint.dir is empty"},
      {"world size mismatch", kData + "parallel: {data: 2, tensor: 2}\ntrain: {global_batch: 8}\n", {"--world", "8"},
       "parallel: data 2 x tensor 2 x pipeline 1 = 4 ranks, but the job has 8; set the degrees so their product is 8"},
      {"--set unknown key", kData, {"--set", "trian.steps=4"},
       "--set trian.steps=4: unknown key trian.steps; did you mean train.steps?"},
      // A key of that name in another section is what was meant, not the section's name.
      {"--set a key in the wrong section", kData, {"--set", "train.lr=0.1"},
       "--set train.lr=0.1: unknown key train.lr; did you mean train.optimizer.lr?"},
      {"--set a key without its section", kData, {"--set", "warmup_steps=5"},
       "--set warmup_steps=5: unknown key warmup_steps; did you mean train.lr_schedule.warmup_steps?"},
      {"--set out of range", kData, {"--set", "train.micro_batch=-3"},
       "--set train.micro_batch=-3: train.micro_batch: -3 is out of range; valid: integer >= 1"},
      {"--set wrong type", kData, {"--set", "train.optimizer.betas=0.9"},
       "--set train.optimizer.betas=0.9: train.optimizer.betas: expected a list, got 0.9"},
      {"--set without a value", kData, {"--set", "train.steps"},
       "--set train.steps: expected section.key=value"},
      {"--set unknown key inside a section map", kData, {"--set", "train.optimizer={lr: 1, bogus: 2}"},
       "unknown key \"bogus\" in section train.optimizer"},
      {"--set breaking a cross-field rule", kData, {"--set", "parallel.pipeline=13"},
       "--set parallel.pipeline=13: parallel.pipeline: 13 stages but model.n_layer is 12"},
      // Found by fuzz_set_value and fuzz_recipe inputs (UBSan: int overflow, or a 2^31-step
      // loop): values near INT_MAX in the cross-field checks.
      {"micro_batch x data beyond int", kData, {"--set", "train.micro_batch=1073741824", "--set", "parallel.data=4"},
       "train.global_batch: 4 is not a multiple of train.micro_batch 1073741824 x parallel.data 4 = 4294967296"},
      {"stages summing beyond int", kData + "model: {n_layer: 2}\nparallel: {pipeline: 2, stages: [2147483647, 1]}\n", {},
       "parallel.stages: the entries sum to 2147483648 but model.n_layer is 2"},
      {"virtual stages beyond int",
       kData + "parallel: {pipeline: 2, schedule: interleaved, virtual_stages: 2147483647}\ntrain: {micro_batch: 1, global_batch: 2}\n",
       {}, "parallel.virtual_stages: 2147483647 x parallel.pipeline 2 = 4294967294 virtual stages but model.n_layer"},
      {"interleaved with a partial group", kData + "parallel: {pipeline: 4, schedule: interleaved, virtual_stages: 2}\n"
       "train: {micro_batch: 1, global_batch: 6}\n",
       {}, "a step has 6 micro-batches per data rank (train.global_batch 6 / (micro_batch 1 x data 1))"},
      {"divisors of a huge n_head", kData + "model: {n_head: 2147483647, d_model: 2147483647}\nparallel: {tensor: 2}\n", {},
       "parallel.tensor: 2 does not divide model.n_head 2147483647; valid: a divisor of 2147483647 (1, 2147483647)"},
      {"multiples near INT_MAX", kData + "model: {n_head: 2, d_model: 2147483647}\n", {},
       "model.d_model: 2147483647 is not divisible by model.n_head 2; valid: a multiple of 2 (e.g. 2147483646 or 2147483648)"},
      {"padded vocabulary beyond int", kData + "model: {vocab_size: 2147483647}\n", {},
       "model.vocab_size: 2147483647 rounded up to a multiple of model.vocab_multiple 128 is 2147483648"},
      {"world size beyond int", kData + "model: {n_layer: 65536}\nparallel: {data: 65536, pipeline: 65536}\n"
       "train: {global_batch: 65536, micro_batch: 1}\neval: {every: 0}\n", {},
       "parallel.data: data 65536 x tensor 1 x pipeline 65536 = 4294967296 ranks; valid: a product of at most 2147483647"},
  };
}

}  // namespace

TEST_CASE("trainer validate rejects each bad recipe with exit code 2 and a precise message") {
  const std::vector<BadRecipe> table = bad_recipes();
  CHECK(table.size() >= 20);
  for (const BadRecipe& bad : table) {
    INFO("case: " << std::string(bad.name));
    std::string path = write_recipe("recipe_cli", "bad.yaml", bad.text);
    std::string cmd = trainer_exe() + " validate " + shell_quote(path);
    for (const std::string& a : bad.args) cmd += " " + shell_quote(a);
    RunResult result = run_command(cmd);
    INFO("output: " << result.output);
    CHECK(result.exit_code == 2);
    CHECK(result.output.find(bad.expected) != std::string::npos);
    CHECK(result.output.find("error: ") == 0);  // one message, no crash report
  }
}

TEST_CASE("trainer validate on a missing file or directory exits 2") {
  RunResult r = run_command(trainer_exe() + " validate /nonexistent/recipe.yaml");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("/nonexistent/recipe.yaml: cannot open the recipe file") != std::string::npos);
  r = run_command(trainer_exe() + " validate " + shell_quote(source_dir() + "/configs"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("is a directory") != std::string::npos);
  r = run_command(trainer_exe() + " validate " + shell_quote(source_dir() + "/configs/quickstart.yaml") +
                  " --world 0");
  CHECK(r.exit_code == 2);
}

TEST_CASE("trainer validate accepts every file in configs/ and prints a loadable recipe") {
  int count = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(source_dir() + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    RunResult r = run_command(trainer_exe() + " validate " + shell_quote(entry.path().string()));
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("data:\n  train: \"") != std::string::npos);
    // The printed recipe validates in turn and prints the same text.
    std::string printed = write_recipe("recipe_cli_printed", "p.yaml", r.output);
    RunResult again = run_command(trainer_exe() + " validate " + shell_quote(printed));
    CHECK(again.exit_code == 0);
    CHECK(again.output.substr(again.output.find('\n')) == r.output.substr(r.output.find('\n')));
    ++count;
  }
  CHECK(count >= 5);
}

TEST_CASE("trainer validate applies --set and checks --world") {
  const std::string recipe = shell_quote(source_dir() + "/configs/gpt2-124m.yaml");
  RunResult r = run_command(trainer_exe() + " validate " + recipe + " --world 8");
  CHECK(r.exit_code == 0);
  r = run_command(trainer_exe() + " validate " + recipe +
                  " --set parallel.data=4 --set 'train.optimizer.betas=[0.9,0.99]' --world 4");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("  data: 4\n") != std::string::npos);
  CHECK(r.output.find("betas: [0.9, 0.99]") != std::string::npos);
  CHECK(r.output.find("seq_len: 1024") != std::string::npos);
}
