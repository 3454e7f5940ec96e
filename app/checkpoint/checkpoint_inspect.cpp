// Checkpoint inspection (see checkpoint_inspect.h).
#include "app/checkpoint/checkpoint_inspect.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>
#include <xxhash.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "app/checkpoint/checkpoint_open.h"
#include "app/checkpoint/checkpoint_reader.h"
#include "kernels/base/format_bytes.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

bool is_step_dir_name(const std::string& name) {
  if (name.size() != 13 || name.rfind("step_", 0) != 0) return false;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

// XXH64 of a whole open file; "" or the problem in `problem`.
uint64_t file_xxh64(int fd, std::string& problem) {
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> st(XXH64_createState(), &XXH64_freeState);
  XXH64_reset(st.get(), 0);
  std::vector<char> buf(size_t(8) << 20);
  int64_t pos = 0;
  while (true) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), pos);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      problem = std::string("read error: ") + std::strerror(errno);
      break;
    }
    if (n == 0) break;
    XXH64_update(st.get(), buf.data(), size_t(n));
    pos += n;
  }
  return XXH64_digest(st.get());
}

// A recipe value as text: a scalar as written, a sequence as [a, b], a missing key as "?".
std::string yaml_text(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "?";
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) {
    std::vector<std::string> items;
    for (const YAML::Node& x : n) items.push_back(yaml_text(x));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  return "{...}";
}

void print_recipe_summary(const CkptManifest& m) {
  const GptConfig& c = m.model;
  try {
    const YAML::Node recipe = YAML::Load(m.recipe_yaml);
    const YAML::Node train = recipe["train"], data = recipe["data"];
    const YAML::Node opt = train["optimizer"], lr = train["lr_schedule"];
    fmt::print("model: {}; {} parameters\n", describe_shape(c), c.num_params());
    fmt::print("optimizer: AdamW lr {}, betas {}, eps {}, weight decay {}, grad clip {}; lr schedule {}, "
               "warmup {} steps, min lr ratio {}\n",
               yaml_text(opt["lr"]), yaml_text(opt["betas"]), yaml_text(opt["eps"]), yaml_text(opt["weight_decay"]),
               yaml_text(opt["grad_clip"]), yaml_text(lr["kind"]), yaml_text(lr["warmup_steps"]),
               yaml_text(lr["min_lr_ratio"]));
    fmt::print("training: {} steps, device {}, precision {}, micro-batch {} x {} tokens, global batch {} sequences\n",
               yaml_text(train["steps"]), yaml_text(train["device"]), yaml_text(train["precision"]),
               yaml_text(train["micro_batch"]), yaml_text(train["seq_len"]), yaml_text(train["global_batch"]));
    fmt::print("data: train \"{}\", val \"{}\", tokenizer {}\n", yaml_text(data["train"]), yaml_text(data["val"]),
               yaml_text(data["tokenizer"]));
  } catch (const YAML::Exception& e) {
    fmt::print("model: {}; {} parameters\n", describe_shape(c), c.num_params());
    fmt::print("recipe: the stored recipe does not parse: {}\n", e.what());
  }
}

double l2_norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * double(x);
  return std::sqrt(s);
}

}  // namespace

std::string resolve_checkpoint_dir(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw InputError(path + ": no such directory; give a checkpoint (a step_NNNNNNNN directory) or a "
                            "checkpoint.dir that holds some");
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // a trailing slash
  // A step directory without a manifest is an incomplete checkpoint: read_manifest says so.
  if (fs::exists(p / "manifest.yaml") || is_step_dir_name(p.filename().string())) return path;
  for (const std::string& dir : list_checkpoints(path))
    if (fs::exists(fs::path(dir) / "manifest.yaml")) return dir;
  throw InputError(path + ": neither a checkpoint (no manifest.yaml) nor a checkpoint.dir holding a complete "
                          "step_NNNNNNNN checkpoint");
}

std::vector<CkptFileCheck> check_checkpoint_files(const std::string& dir, const CkptManifest& manifest) {
  std::vector<CkptFileCheck> out;
  for (const CkptFile& f : manifest.files) {
    CkptFileCheck c;
    c.name = f.name;
    c.rank = f.rank;
    c.recorded_bytes = f.bytes;
    c.recorded_xxh64 = f.xxh64;
    const RegularFile file((fs::path(dir) / f.name).string());
    if (!file.ok() && file.open_errno() == ENOENT) {
      c.problem = "missing (" + file.problem() + ")";
    } else if (!file.ok()) {
      c.problem = file.problem() + "; a checkpoint file must be a regular file";
    } else {
      c.actual_bytes = file.size();
      if (c.actual_bytes != f.bytes) {
        c.problem = fmt::format("size {} bytes, but the manifest records {} (truncated or overwritten)", c.actual_bytes,
                                f.bytes);
      } else {
        const uint64_t h = file_xxh64(file.fd(), c.problem);
        if (c.problem.empty() && h != f.xxh64)
          c.problem =
              fmt::format("checksum mismatch: xxh64 {:016x}, the manifest records {:016x} (corrupted)", h, f.xxh64);
      }
    }
    out.push_back(c);
  }
  return out;
}

void inspect_checkpoint(const std::string& path, const std::vector<OptimizerState>& states) {
  const std::string dir = resolve_checkpoint_dir(path);
  const CkptManifest m = read_manifest(dir);
  fmt::print("checkpoint: {}{}\n", dir, dir == path ? "" : fmt::format(" (the newest in {})", path));
  fmt::print("step: {} (seed {}, data loader epoch {}, position {})\n", m.step, m.seed, m.loader.epoch,
             m.loader.position);
  for (const SourceState& s : m.loader.sources)
    fmt::print("  data source {}: epoch {}, position {}\n", s.path, s.epoch, s.position);
  fmt::print("program version: {} (checkpoint format {})\n", m.program_version, m.format);
  print_recipe_summary(m);
  const int world = m.dims.world();
  const std::string chunks =
      m.dims.interleaved() ? fmt::format(", {} virtual stages per rank, layers per virtual stage", m.dims.virtual_stages)
                           : std::string(", layers per stage");
  fmt::print("layout: data {} x tensor {} x pipeline {} = {} rank{}, zero {}{} [{}]\n", m.dims.data, m.dims.tensor, m.dims.pipeline,
             world, world == 1 ? "" : "s", m.zero, chunks, fmt::join(m.stage_layers, ", "));
  std::fflush(stdout);

  const std::vector<CkptFileCheck> checks = check_checkpoint_files(dir, m);
  int64_t total = 0;
  for (const CkptFile& f : m.files) total += f.bytes;
  fmt::print("files: {} ({}), checked against the manifest's sizes and xxh64 checksums\n", m.files.size(),
             format_bytes(total));
  std::vector<std::string> bad;
  for (const CkptFileCheck& c : checks) {
    fmt::print("  {}  rank {:>3}  {:>12} bytes  xxh64 {:016x}  {}\n", c.name, c.rank, c.recorded_bytes,
               c.recorded_xxh64, c.problem.empty() ? "ok" : "BAD: " + c.problem);
    if (!c.problem.empty()) bad.push_back(c.name + ": " + c.problem);
  }
  std::fflush(stdout);
  if (!bad.empty())
    throw InputError(fmt::format("checkpoint {}: {} of {} files failed verification: {}", dir, bad.size(),
                                 checks.size(), fmt::join(bad, "; ")));

  CheckpointReader reader(dir);
  const std::vector<ParamSpec> table = param_table(m.model);
  size_t width = 4;
  for (const ParamSpec& s : table) width = std::max(width, s.name.size());
  std::vector<std::string> state_names;
  for (OptimizerState s : states) state_names.push_back(optimizer_state_name(s));
  fmt::print("tensors: {}; L2 norm of {}\n", table.size(), fmt::join(state_names, ", "));
  fmt::print("  {:<{}}  {:<14}  {:<5}", "name", width, "shape", "dtype");
  for (const std::string& s : state_names) fmt::print("  {:>12}", s);
  fmt::print("\n");
  for (const ParamSpec& s : table) {
    fmt::print("  {:<{}}  {:<14}  {:<5}", s.name, width, fmt::format("[{}]", fmt::join(s.shape, ", ")), "f32");
    for (OptimizerState st : states) fmt::print("  {:>12.6g}", l2_norm(reader.read_full(s.name, st)));
    fmt::print("\n");
  }
  std::fflush(stdout);
}

}  // namespace trainer
