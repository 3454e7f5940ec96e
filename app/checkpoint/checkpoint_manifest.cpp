// Checkpoint manifest: YAML writing and parsing, and the per-rank piece lists.
#include "app/checkpoint/checkpoint_manifest.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "kernels/base/errors.h"

namespace trainer {

namespace {

TpSplit parse_split(const std::string& s, const std::string& where) {
  if (std::optional<TpSplit> split = enum_from_name(kTpSplitNames, s)) return *split;
  throw InputError(where + ": unknown tensor split '" + s + "'; valid: " + enum_choices(kTpSplitNames));
}

OptimizerState parse_state(const std::string& s, const std::string& where) {
  if (std::optional<OptimizerState> state = enum_from_name(kOptimizerStateNames, s)) return *state;
  throw InputError(where + ": unknown state '" + s + "'; valid: " + enum_choices(kOptimizerStateNames));
}

std::string hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string step_dir_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

std::vector<Range> slice_to_global(const std::vector<Range>& runs, int64_t begin, int64_t end) {
  std::vector<Range> out;
  int64_t pos = 0;
  for (const Range& r : runs) {
    Range local{pos, pos + r.size()};
    Range x = intersect(local, {begin, end});
    if (!x.empty()) out.push_back({r.begin + (x.begin - pos), r.begin + (x.end - pos)});
    pos += r.size();
    if (pos >= end) break;
  }
  return out;
}

std::vector<CkptPiece> rank_pieces(const StageLayout& layout, int file_index) {
  std::vector<CkptPiece> out;
  int64_t offset = 0;
  const LayoutOptions& o = layout.options();
  for (int i = 0; i < int(layout.params().size()); ++i) {
    const LocalParam& p = layout.params()[i];
    const ParamSpec& spec = layout.spec(p);
    if (p.copy != CopyKind::primary) continue;
    if (spec.split == TpSplit::none && o.tp_rank != 0) continue;
    Range own = layout.owned_slice(p);
    if (own.empty()) continue;
    for (OptimizerState st : kOptimizerStates) {
      CkptPiece c;
      c.name = spec.name;
      c.state = st;
      c.file = file_index;
      c.offset = offset;
      c.split = spec.split;
      c.tp_rank = o.tp_rank;
      c.tp = o.tp;
      c.begin = own.begin;
      c.end = own.end;
      c.local = i;
      offset += own.size() * 4;
      out.push_back(c);
    }
  }
  return out;
}

std::string manifest_to_yaml(const CkptManifest& m) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "format" << YAML::Value << m.format;
  e << YAML::Key << "program_version" << YAML::Value << m.program_version;
  e << YAML::Key << "step" << YAML::Value << m.step;
  e << YAML::Key << "seed" << YAML::Value << m.seed;
  e << YAML::Key << "run" << YAML::Value << m.run;
  e << YAML::Key << "loss" << YAML::Value << m.loss;
  e << YAML::Key << "loader" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "epoch" << YAML::Value
    << m.loader.epoch << YAML::Key << "position" << YAML::Value << m.loader.position << YAML::EndMap;
  e << YAML::Key << "layout" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "data" << YAML::Value << m.data << YAML::Key << "tensor" << YAML::Value << m.tensor;
  e << YAML::Key << "pipeline" << YAML::Value << m.pipeline << YAML::Key << "zero" << YAML::Value << m.zero;
  e << YAML::Key << "stages" << YAML::Value << YAML::Flow << m.stage_layers;
  e << YAML::EndMap;
  const GptConfig& c = m.model;
  e << YAML::Key << "model" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "n_layer" << YAML::Value << c.n_layer << YAML::Key << "n_head" << YAML::Value << c.n_head;
  e << YAML::Key << "d_model" << YAML::Value << c.d_model << YAML::Key << "vocab_size" << YAML::Value << c.vocab_size;
  e << YAML::Key << "padded_vocab" << YAML::Value << c.padded_vocab << YAML::Key << "max_seq_len" << YAML::Value
    << c.max_seq_len;
  e << YAML::EndMap;
  e << YAML::Key << "files" << YAML::Value << YAML::BeginSeq;
  for (const CkptFile& f : m.files)
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << f.name << YAML::Key << "rank"
      << YAML::Value << f.rank << YAML::Key << "bytes" << YAML::Value << f.bytes << YAML::Key << "xxh64"
      << YAML::Value << hex64(f.xxh64) << YAML::EndMap;
  e << YAML::EndSeq;
  e << YAML::Key << "pieces" << YAML::Value << YAML::BeginSeq;
  for (const CkptPiece& p : m.pieces)
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name << YAML::Key << "state"
      << YAML::Value << optimizer_state_name(p.state) << YAML::Key << "file" << YAML::Value << p.file << YAML::Key
      << "offset" << YAML::Value << p.offset << YAML::Key << "split" << YAML::Value << tp_split_name(p.split)
      << YAML::Key << "tp_rank" << YAML::Value << p.tp_rank << YAML::Key << "tp" << YAML::Value << p.tp
      << YAML::Key << "begin" << YAML::Value << p.begin << YAML::Key << "end" << YAML::Value << p.end
      << YAML::EndMap;
  e << YAML::EndSeq;
  e << YAML::Key << "recipe" << YAML::Value << YAML::Literal << m.recipe_yaml;
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

CkptManifest read_manifest(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "manifest.yaml").string();
  if (!std::filesystem::exists(path)) throw InputError(path + ": missing (the checkpoint is incomplete)");
  CkptManifest m;
  try {
    YAML::Node n = YAML::LoadFile(path);
    m.format = n["format"].as<int>();
    if (m.format != kCheckpointFormat)
      throw InputError(path + ": checkpoint format " + std::to_string(m.format) + " is not supported; valid: " +
                       std::to_string(kCheckpointFormat));
    m.program_version = n["program_version"].as<std::string>();
    m.step = n["step"].as<int64_t>();
    m.seed = n["seed"].as<uint64_t>();
    if (n["run"]) m.run = n["run"].as<std::string>();
    if (n["loss"]) m.loss = n["loss"].as<double>();
    m.loader.epoch = n["loader"]["epoch"].as<int64_t>();
    m.loader.position = n["loader"]["position"].as<int64_t>();
    const YAML::Node l = n["layout"];
    m.data = l["data"].as<int>();
    m.tensor = l["tensor"].as<int>();
    m.pipeline = l["pipeline"].as<int>();
    m.zero = l["zero"].as<int>();
    m.stage_layers = l["stages"].as<std::vector<int>>();
    const YAML::Node c = n["model"];
    m.model.n_layer = c["n_layer"].as<int>();
    m.model.n_head = c["n_head"].as<int>();
    m.model.d_model = c["d_model"].as<int>();
    m.model.vocab_size = c["vocab_size"].as<int>();
    m.model.padded_vocab = c["padded_vocab"].as<int>();
    m.model.max_seq_len = c["max_seq_len"].as<int>();
    m.recipe_yaml = n["recipe"].as<std::string>();
    for (const YAML::Node& f : n["files"]) {
      CkptFile x;
      x.name = f["name"].as<std::string>();
      x.rank = f["rank"].as<int>();
      x.bytes = f["bytes"].as<int64_t>();
      x.xxh64 = std::stoull(f["xxh64"].as<std::string>(), nullptr, 16);
      m.files.push_back(x);
    }
    for (const YAML::Node& p : n["pieces"]) {
      CkptPiece x;
      x.name = p["name"].as<std::string>();
      x.state = parse_state(p["state"].as<std::string>(), path);
      x.file = p["file"].as<int>();
      x.offset = p["offset"].as<int64_t>();
      x.split = parse_split(p["split"].as<std::string>(), path);
      x.tp_rank = p["tp_rank"].as<int>();
      x.tp = p["tp"].as<int>();
      x.begin = p["begin"].as<int64_t>();
      x.end = p["end"].as<int64_t>();
      if (x.file < 0 || x.file >= int(m.files.size()))
        throw InputError(path + ": piece of " + x.name + " names file " + std::to_string(x.file) + " of " +
                         std::to_string(m.files.size()));
      m.pieces.push_back(x);
    }
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": malformed checkpoint manifest: " + e.what());
  } catch (const std::logic_error& e) {  // std::stoull: invalid_argument, out_of_range
    throw InputError(path + ": malformed checkpoint manifest: " + e.what());
  }
  return m;
}

}  // namespace trainer
