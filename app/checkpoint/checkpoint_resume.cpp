// Resuming from checkpoints (see checkpoint_resume.h).
#include "app/checkpoint/checkpoint_resume.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <map>
#include <utility>
#include <memory>

#include "app/checkpoint/checkpoint_inspect.h"
#include "app/checkpoint/checkpoint_lineage.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace {

// Checks the files this rank will read; returns "" or the problem.
std::string validate_for_rank(CheckpointReader& reader, const CkptParts& parts) {
  try {
    std::set<int> files;
    for (const LocalParam& p : parts.layout.params()) {
      const std::string& name = parts.layout.spec(p).name;
      for (OptimizerState s : kOptimizerStates) {
        Range need = parts.store.needed_range(p, s);
        for (int f : reader.files_for(name, s, slice_to_global(p.runs, need.begin, need.end))) files.insert(f);
      }
    }
    reader.verify_files(files);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Opens `dir` and checks this rank's files; returns the reader (null when it cannot be opened)
// and sets `problem` to what is wrong ("" when nothing is).
std::unique_ptr<CheckpointReader> open_checked(const std::string& dir, const CkptParts& parts, std::string& problem) {
  std::unique_ptr<CheckpointReader> reader;
  problem.clear();
  try {
    reader = std::make_unique<CheckpointReader>(dir);
  } catch (const InputError& e) {
    problem = e.what();
  }
  if (reader) check_model_matches(*reader, parts.run.model);
  if (reader) problem = validate_for_rank(*reader, parts);
  return reader;
}

bool agree(Comm& world, bool ok) {
  int32_t bad = ok ? 0 : 1;
  world.all_reduce(make_tensor(&bad, DType::i32, Device::cpu, {1}), ReduceOp::max);
  return bad == 0;
}

}  // namespace

void check_model_matches(const CheckpointReader& reader, const GptConfig& config) {
  const GptConfig& saved = reader.manifest().model;
  auto shape_text = [](const GptConfig& c) {
    return fmt::format("{} n_layer {}, n_head {}, d_model {}, vocab_size {}, seq_len {}", model_arch_name(c.arch),
                       c.n_layer, c.n_head, c.d_model, c.vocab_size, c.max_seq_len);
  };
  const std::string both = " (checkpoint: " + shape_text(saved) + "; recipe: " + shape_text(config) + ")";
  // Matched by name, in the recipe's order: the first tensor that differs is named.
  std::map<std::string, std::vector<int64_t>> theirs;
  for (const ParamSpec& s : param_table(saved)) theirs[s.name] = s.shape;
  for (const ParamSpec& s : param_table(config)) {
    auto it = theirs.find(s.name);
    if (it == theirs.end())
      throw ConfigError(fmt::format("checkpoint {} has no tensor {} [{}] that the recipe's model needs{}", reader.dir(),
                                    s.name, fmt::join(s.shape, ", "), both));
    if (it->second != s.shape)
      throw ConfigError(fmt::format("checkpoint {}: tensor {} has shape [{}] but the recipe's model needs [{}]{}",
                                    reader.dir(), s.name, fmt::join(it->second, ", "), fmt::join(s.shape, ", "), both));
    theirs.erase(it);
  }
  for (const ParamSpec& s : param_table(saved))
    if (theirs.count(s.name))
      throw ConfigError(fmt::format("checkpoint {} has tensor {} [{}] that the recipe's model lacks{}", reader.dir(),
                                    s.name, fmt::join(s.shape, ", "), both));
  // What the tables do not show: a resume continues the same model.
  const RopeScaling &a = saved.rope_scaling, &b = config.rope_scaling;
  const std::pair<const char*, bool> differs[] = {
      {"model.arch", saved.arch != config.arch},
      {"model.vocab_size", saved.vocab_size != config.vocab_size},
      {"model.n_head", saved.n_head != config.n_head},
      {"model.n_kv_head", saved.kv_heads() != config.kv_heads()},
      {"model.norm_eps", saved.norm_eps != config.norm_eps},
      {"model.rope_theta", saved.rope_theta != config.rope_theta},
      {"model.rope_scaling", a.factor != b.factor || a.low_freq_factor != b.low_freq_factor ||
                                 a.high_freq_factor != b.high_freq_factor || a.original_context != b.original_context}};
  for (const auto& [key, different] : differs)
    if (different)
      throw ConfigError(fmt::format("checkpoint {}: the model differs from the recipe's in {}{}", reader.dir(), key,
                                    both));
}

int64_t load_checkpoint(const CkptParts& parts, CheckpointReader& reader, LoadStates states) {
  for (const LocalParam& p : parts.layout.params()) {
    const std::string& name = parts.layout.spec(p).name;
    for (OptimizerState s : kOptimizerStates) {
      if (states == LoadStates::weights && s != OptimizerState::master) continue;
      Range need = parts.store.needed_range(p, s);
      std::vector<float> values(size_t(need.size()));
      reader.read(name, s, slice_to_global(p.runs, need.begin, need.end), values.data());
      parts.store.write_state(p, s, values);
    }
  }
  parts.store.sync_compute_from_master();
  if (states == LoadStates::all && parts.loader) parts.loader->restore(reader.manifest().loader);
  return reader.manifest().step;
}

int64_t roll_back_to(const CkptParts& parts, const std::string& dir) {
  std::string problem;
  std::unique_ptr<CheckpointReader> reader = open_checked(dir, parts, problem);
  if (!agree(parts.world, problem.empty()))
    throw InputError("rollback: " + dir + " cannot be loaded: " +
                     (problem.empty() ? std::string("a file another rank needs is missing or corrupt") : problem));
  const LoaderState past = parts.loader ? parts.loader->state() : LoaderState{};
  const int64_t step = load_checkpoint(parts, *reader);
  if (parts.loader) parts.loader->restore(past);
  return step;
}

Resumed resume_from_checkpoint(const CkptParts& parts, Reporting reporting) {
  const bool print = reporting == Reporting::on;
  const CheckpointConfig& c = parts.config;
  Comm& world = parts.world;
  if (c.resume == "never") {
    if (print) fmt::print("checkpoint: resume never: starting at step 0\n");
    return {};
  }
  const bool explicit_path = c.resume != "auto";
  std::vector<std::string> candidates;
  if (explicit_path) candidates.push_back(resolve_checkpoint_dir(c.resume));
  else if (!c.dir.empty()) candidates = resume_candidates(c.dir);
  for (const std::string& dir : candidates) {
    std::string problem;
    std::unique_ptr<CheckpointReader> reader = open_checked(dir, parts, problem);
    if (!agree(world, problem.empty())) {
      if (explicit_path)
        throw InputError("checkpoint.resume: " + dir + " cannot be loaded: " +
                         (problem.empty() ? std::string("a file another rank needs is missing or corrupt") : problem));
      if (print)
        fmt::print("checkpoint: skipping {}: {}; trying the previous one\n", dir,
                   problem.empty() ? "a file another rank needs is missing or corrupt" : problem);
      continue;
    }
    const int64_t step = load_checkpoint(parts, *reader);
    const CkptManifest& saved = reader->manifest();
    if (print) {
      fmt::print("checkpoint: resuming from {} (step {}, saved with data {} x tensor {} x pipeline {}, zero {})\n",
                 dir, saved.step, saved.dims.data, saved.dims.tensor, saved.dims.pipeline, saved.zero);
      if (saved.seed != parts.run.seed)
        fmt::print("checkpoint: note: saved with seed {}, the recipe now says {} (data order follows the recipe)\n",
                   saved.seed, parts.run.seed);
    }
    return Resumed{dir, saved.run, step, saved.recipe_yaml};
  }
  if (explicit_path) throw InputError("checkpoint.resume: no checkpoint given");
  if (print)
    fmt::print("checkpoint: no complete checkpoint in '{}': starting at step 0\n", c.dir.empty() ? "(no checkpoint.dir)" : c.dir);
  return {};
}

}  // namespace trainer
