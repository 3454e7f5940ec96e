// trainer ckpt inspect|export: look into and convert checkpoints. Single process, no MPI.
//   trainer ckpt inspect DIR [--state master|adam_m|adam_v|all]...
//   trainer ckpt export DIR --format llmc|safetensors|hf --out FILE|DIR [--max-shard-size 5GB] [--force]
// DIR is a step_NNNNNNNN checkpoint or a checkpoint.dir (its newest checkpoint). A file that
// fails its size or checksum check is an InputError (exit code 2).
#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_export.h"
#include "app/checkpoint/checkpoint_inspect.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "app/cli/commands.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

struct CkptOptions {
  std::string inspect_dir;
  std::vector<std::string> states;
  std::string export_dir;
  std::string format;
  std::string out;
  std::string max_shard_size = "5GB";
  bool max_shard_size_given = false;  // on the command line (only hf shards its files)
  bool force = false;                 // --force: hf replaces an earlier export's files
};

// --max-shard-size: bytes, or a number with KB/MB/GB (powers of 1000, as transformers'
// save_pretrained) or KiB/MiB/GiB.
int64_t parse_shard_size(const std::string& text) {
  size_t used = 0;
  long long n = -1;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    n = -1;
  }
  const std::string unit = n >= 0 ? text.substr(used) : "";
  const std::pair<const char*, int64_t> units[] = {{"", 1},          {"B", 1},           {"KB", 1000},
                                                   {"MB", 1000000},  {"GB", 1000000000}, {"KiB", 1024},
                                                   {"MiB", 1 << 20}, {"GiB", 1 << 30}};
  for (const auto& [name, scale] : units)
    if (n > 0 && unit == name && n <= (int64_t(1) << 62) / scale) return int64_t(n) * scale;
  throw ConfigError("ckpt export --max-shard-size '" + text +
                    "': valid: a positive size in bytes, or with KB, MB, GB, KiB, MiB or GiB (e.g. 5GB)");
}

// --state takes a state's manifest name or this word for every state.
constexpr const char* kAllStates = "all";
constexpr OptimizerState kDefaultState = OptimizerState::master;

std::vector<std::string> state_choices() {
  std::vector<std::string> names = enum_names(kOptimizerStateNames);
  names.push_back(kAllStates);
  return names;
}

std::vector<OptimizerState> parse_states(const std::vector<std::string>& names) {
  if (names.empty()) return {kDefaultState};
  std::vector<OptimizerState> out;
  auto add = [&](OptimizerState s) {
    for (OptimizerState x : out)
      if (x == s) return;
    out.push_back(s);
  };
  for (const std::string& n : names) {
    if (n == kAllStates) {
      for (OptimizerState s : kOptimizerStates) add(s);
    } else if (std::optional<OptimizerState> state = enum_from_name(kOptimizerStateNames, n)) {
      add(*state);
    } else {
      throw ConfigError("ckpt inspect --state: unknown state '" + n +
                        "'; valid: " + enum_choices(kOptimizerStateNames) + ", " + kAllStates);
    }
  }
  return out;
}

std::string state_help() {
  std::string help = "which stored state's norms to print (repeatable): ";
  for (const EnumName<OptimizerState>& row : kOptimizerStateNames)
    help += std::string(row.name) + (row.value == kDefaultState ? " (default)" : "") + ", ";
  return help + kAllStates;
}

int run_inspect(const CkptOptions& o) {
  inspect_checkpoint(o.inspect_dir, parse_states(o.states));
  return 0;
}

int run_export(const CkptOptions& o) {
  const std::optional<ExportFormat> format = enum_from_name(kExportFormatNames, o.format);
  if (!format)
    throw ConfigError("ckpt export --format: unknown format '" + o.format + "'; valid: " +
                      enum_choices(kExportFormatNames));
  // A size the format would ignore is refused rather than dropped silently.
  if (o.max_shard_size_given && *format != ExportFormat::hf)
    throw ConfigError("ckpt export --max-shard-size " + o.max_shard_size + ": only --format hf shards its files, but "
                      "--format is " + o.format + " (one file); valid: no --max-shard-size, or --format hf");
  if (o.force && *format != ExportFormat::hf)
    throw ConfigError("ckpt export --force: only --format hf replaces a set of files, but --format is " + o.format +
                      ", which replaces its one file whole (atomically) without it; valid: no --force, or --format hf");
  const std::string dir = resolve_checkpoint_dir(o.export_dir);
  CheckpointReader reader(dir);
  const std::string note = export_checkpoint(reader, *format, o.out, parse_shard_size(o.max_shard_size),
                                             o.force ? ExportExisting::replace : ExportExisting::refuse);
  if (!note.empty()) fmt::print("{}\n", note);
  fmt::print("exported {} (step {}) as {} to {}\n", dir, reader.manifest().step, o.format, o.out);
  return 0;
}

}  // namespace

void add_ckpt_command(CLI::App& app, CommandList& commands) {
  auto opt = std::make_shared<CkptOptions>();
  auto* sub = app.add_subcommand("ckpt", "Look into and convert checkpoints (no MPI launcher needed)");
  sub->require_subcommand(1);
  auto* inspect = sub->add_subcommand(
      "inspect", "Print a checkpoint's step, recipe summary, layout, files (checksums verified) and every tensor "
                 "with its shape, dtype and L2 norm; a bad file is reported and exits 2");
  inspect->add_option("dir", opt->inspect_dir, "a step_NNNNNNNN checkpoint, or a checkpoint.dir (its newest one)")
      ->required();
  inspect->add_option("--state", opt->states, state_help())
      ->check(CLI::IsMember(state_choices()))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* exp = sub->add_subcommand(
      "export", "Write a checkpoint's fp32 weights as an llm.c model file (version 3, gpt2 only), as one "
                "safetensors file with the Hugging Face names and shapes of its family (GPT2LMHeadModel's or "
                "LlamaForCausalLM's), or as a Hugging Face model folder (hf: config.json, safetensors, "
                "generation_config.json, tokenizer files)");
  exp->add_option("dir", opt->export_dir, "a step_NNNNNNNN checkpoint, or a checkpoint.dir (its newest one)")
      ->required();
  exp->add_option("--format", opt->format, enum_choices(kExportFormatNames, ", ", " or "))
      ->required()
      ->check(CLI::IsMember(enum_names(kExportFormatNames)));
  exp->add_option("--out", opt->out, "output file (written to a temporary file, then renamed); a folder for hf")
      ->required();
  auto* shard = exp->add_option("--max-shard-size", opt->max_shard_size,
                                "hf: largest safetensors file before sharding with an index (bytes, or KB/MB/GB, "
                                "KiB/MiB/GiB); refused with the other formats, which write one file")
                     ->capture_default_str();
  exp->add_flag("--force", opt->force,
                "hf: replace an earlier export in --out (its whole set of files: config.json, safetensors and "
                "index, generation and tokenizer files; other files are kept); without it such a folder is refused");
  commands.push_back({sub, [opt, inspect, exp, shard]() -> int {
                        if (inspect->parsed()) return run_inspect(*opt);
                        opt->max_shard_size_given = shard->count() > 0;
                        if (exp->parsed()) return run_export(*opt);
                        throw ConfigError("trainer ckpt: give a subcommand: inspect or export");
                      }});
}

}  // namespace trainer
