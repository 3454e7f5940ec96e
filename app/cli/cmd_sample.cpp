// trainer sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]
//                [--decoding cache|window] [--logits FILE]
// Generates text from a checkpoint (a step_NNNNNNNN directory, or a checkpoint.dir whose newest
// complete checkpoint is used). The model shape and tokenizer come from the checkpoint's
// recipe; it runs on one process by default (any layout via --set under mpirun). --logits
// writes JSON {"prompt_ids": [...], "ids": [prompt and generated], "logits": [row, ...]}: row k
// is the distribution (real vocabulary) the k-th new token was chosen from, i.e. the logits at
// position len(prompt_ids) - 1 + k (scripts/gpu_check.sh compares them with transformers').
#include <fmt/core.h>

#include <memory>

#include "app/checkpoint/checkpoint_inspect.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "app/checkpoint/checkpoint_resume.h"
#include "app/cli/cli_checks.h"
#include "app/cli/commands.h"
#include "app/engine/recipe_agreement.h"
#include "app/engine/trainer.h"
#include "app/recipe/recipe.h"
#include "data/tokenizer.h"
#include "kernels/base/atomic_file.h"
#include "kernels/base/errors.h"
#include "parallel/mpi_runtime.h"

namespace trainer {

namespace {

struct SampleOptions {
  std::string checkpoint;
  std::string prompt = "\n";
  int tokens = 200;
  float temperature = 1.0f;
  int top_k = 40;
  uint64_t seed = 1;
  std::string decoding = "cache";
  std::string logits;  // --logits FILE ("" = none)
  std::vector<std::string> overrides;
};

int sample_under_mpi(const SampleOptions& o, const std::string& dir, const Recipe& recipe, MpiRuntime& mpi);

std::string json_ids(const std::vector<int32_t>& ids) {
  std::string j = "[";
  for (size_t i = 0; i < ids.size(); ++i) j += (i ? ", " : "") + std::to_string(ids[i]);
  return j + "]";
}

void write_logits_json(const std::string& path, const std::vector<int32_t>& prompt, const std::vector<int32_t>& ids,
                       const std::vector<std::vector<float>>& rows) {
  std::string j = "{\"prompt_ids\": " + json_ids(prompt) + ", \"ids\": " + json_ids(ids) + ", \"logits\": [";
  for (size_t r = 0; r < rows.size(); ++r) {
    j += r ? ",\n[" : "\n[";
    for (size_t i = 0; i < rows[r].size(); ++i) j += (i ? ", " : "") + fmt::format("{:.9g}", rows[r][i]);
    j += "]";
  }
  write_file_atomically(path, "logits file (--logits)", std::string_view(j + "]}\n"));
}

int run_sample(const SampleOptions& o) {
  if (o.tokens < 1) throw ConfigError("--tokens " + std::to_string(o.tokens) + ": valid: >= 1");
  if (o.top_k < 0) throw ConfigError("--top-k " + std::to_string(o.top_k) + ": valid: >= 0 (0 = no limit)");
  const std::string dir = resolve_checkpoint_dir(o.checkpoint);
  CkptManifest manifest = read_manifest(dir);
  std::vector<std::string> overrides = {"parallel.data=1",   "parallel.tensor=1", "parallel.pipeline=1",
                                        "parallel.zero=0",   "parallel.stages=[]", "train.micro_batch=1",
                                        "train.global_batch=1", "eval.every=0",     "checkpoint.every=0",
                                        "checkpoint.dir=",   "log.metrics=",      "model.init_from="};
  overrides.insert(overrides.end(), o.overrides.begin(), o.overrides.end());
  Recipe recipe = load_recipe_text(manifest.recipe_yaml, dir + "/manifest.yaml (recipe)", overrides);
  MpiRuntime mpi(recipe.parallel.timeout_s);
  return mpi.run([&] { return sample_under_mpi(o, dir, recipe, mpi); });
}

int sample_under_mpi(const SampleOptions& o, const std::string& dir, const Recipe& recipe, MpiRuntime& mpi) {
  check_recipe_agreement(recipe, mpi.world());
  const bool rank0 = mpi.world().rank() == 0;
  Trainer t(recipe, mpi.world(), mpi.local_rank(), DataNeed::none);
  CheckpointReader reader(dir);
  check_model_matches(reader, t.config());
  t.set_step(load_checkpoint(t.checkpoint_parts(), reader, LoadStates::weights));
  auto tokenizer = make_tokenizer(recipe.data.tokenizer, recipe.data.tokenizer_dir, "data.tokenizer",
                                  recipe.data.bos, recipe.data.eos, "data.bos", "data.eos");
  std::vector<int32_t> prompt = tokenizer->encode(o.prompt);
  if (prompt.empty()) prompt.push_back(tokenizer->eot());
  GenerateOptions g;
  g.tokens = o.tokens;
  g.temperature = o.temperature;
  g.top_k = o.top_k;
  g.seed = o.seed;
  g.decoding = *enum_from_name(kDecodingNames, o.decoding);
  std::vector<std::vector<float>> rows;
  if (!o.logits.empty()) g.on_logits = [&](const std::vector<float>& row) { rows.push_back(row); };
  std::vector<int32_t> out = t.generate(prompt, g);
  // The rows reach the last pipeline stage's ranks: its leader writes them.
  if (!o.logits.empty() && mpi.world().rank() == t.stage_leader(recipe.parallel.pipeline - 1))
    write_logits_json(o.logits, prompt, out, rows);
  if (rank0) {
    std::vector<int32_t> generated(out.begin() + long(prompt.size()), out.end());
    for (auto& id : generated)
      if (id >= tokenizer->vocab_size()) id = tokenizer->eot();
    fmt::print("{}{}\n", o.prompt, tokenizer->decode(generated));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

void add_sample_command(CLI::App& app, CommandList& commands) {
  auto o = std::make_shared<SampleOptions>();
  auto* sub = app.add_subcommand("sample", "Generate text from a checkpoint");
  sub->add_option("checkpoint", o->checkpoint, "A step_NNNNNNNN directory, or a checkpoint.dir (its newest)")
      ->required();
  sub->add_option("--prompt", o->prompt, "Text to continue")->capture_default_str();
  sub->add_option("--tokens", o->tokens, "Number of tokens to generate")
      ->capture_default_str()
      ->check(int_in(1, int64_t(1) << 24));
  sub->add_option("--temperature", o->temperature, "Softmax temperature; 0 = greedy")
      ->capture_default_str()
      ->check(finite_in(0, 1e6));
  sub->add_option("--top-k", o->top_k, "Sample among the k most likely tokens; 0 = all")
      ->capture_default_str()
      ->check(int_in(0, int64_t(1) << 30));
  sub->add_option("--seed", o->seed, "Seed of the sampling random numbers")->capture_default_str();
  sub->add_option("--decoding", o->decoding,
                  "cache: run each new token against a KV cache; window: rerun the whole window per token")
      ->capture_default_str()
      ->check(CLI::IsMember(enum_names(kDecodingNames)));
  sub->add_option("--logits", o->logits,
                  "Also write JSON with the prompt's and all ids and every new token's logits to this file");
  sub->add_option("--set", o->overrides, "Override a key of the checkpoint's recipe (e.g. train.device=cuda)");
  commands.push_back({sub, [o]() { return run_sample(*o); }});
}

}  // namespace trainer
