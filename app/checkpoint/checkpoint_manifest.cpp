// Checkpoint manifest: YAML writing and parsing (checked by checkpoint_validate), and the
// per-rank piece lists.
#include "app/checkpoint/checkpoint_manifest.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "app/checkpoint/checkpoint_open.h"
#include "app/checkpoint/checkpoint_validate.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {

namespace {

TpSplit parse_split(const std::string& s, const std::string& where) {
  if (std::optional<TpSplit> split = enum_from_name(kTpSplitNames, s)) return *split;
  throw InputError(where + ": unknown tensor split '" + excerpt(s) + "'; valid: " + enum_choices(kTpSplitNames));
}

OptimizerState parse_state(const std::string& s, const std::string& where) {
  if (std::optional<OptimizerState> state = enum_from_name(kOptimizerStateNames, s)) return *state;
  throw InputError(where + ": unknown state '" + excerpt(s) + "'; valid: " + enum_choices(kOptimizerStateNames));
}

// node[key] as T; a missing key or a value of another type is an InputError naming the entry
// ("files[3].bytes").
template <typename T>
T field(const YAML::Node& node, const char* key, const std::string& path, const std::string& entry) {
  const std::string name = entry.empty() ? std::string(key) : entry + "." + key;
  const YAML::Node v = node[key];
  if (!v.IsDefined() || v.IsNull()) throw InputError(path + ": malformed checkpoint manifest: " + name + " is missing");
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(path + ": malformed checkpoint manifest: " + name + " " +
                     (v.IsScalar() ? "'" + excerpt(v.Scalar()) + "'" : std::string("(not a scalar)")) +
                     " is not a valid value");
  }
}

YAML::Node section(const YAML::Node& node, const char* key, const std::string& path) {
  const YAML::Node v = node[key];
  if (!v.IsMap()) throw InputError(path + ": malformed checkpoint manifest: " + key + " is missing or not a map");
  return v;
}

YAML::Node sequence(const YAML::Node& node, const char* key, const std::string& path) {
  const YAML::Node v = node[key];
  if (!v.IsSequence())
    throw InputError(path + ": malformed checkpoint manifest: " + key + " is missing or not a list");
  return v;
}

// 1 to 16 hex digits, nothing else (a checksum as manifest_to_yaml writes it).
uint64_t parse_hex64(const std::string& s, const std::string& where) {
  if (s.empty() || s.size() > 16)
    throw InputError(where + " '" + excerpt(s) + "': malformed checkpoint manifest: not 1 to 16 hex digits");
  uint64_t v = 0;
  for (char ch : s) {
    const int d = ch >= '0' && ch <= '9'   ? ch - '0'
                  : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                  : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                           : -1;
    if (d < 0) throw InputError(where + " '" + excerpt(s) + "': malformed checkpoint manifest: not 1 to 16 hex digits");
    v = v << 4 | uint64_t(d);
  }
  return v;
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

LayoutOptions layout_options_of(const CkptManifest& m, int rank) {
  LayoutOptions o;
  o.dims = m.dims;
  o.dims.virtual_stages = m.dims.chunks_per_rank();
  o.at = m.dims.coords_of(rank);
  o.stage_layers = m.stage_layers;
  return o;
}

std::vector<CkptPiece> rank_pieces(const StageLayout& layout, int file_index) {
  std::vector<CkptPiece> out;
  int64_t offset = 0;
  for (int i = 0; i < int(layout.params().size()); ++i) {
    const LocalParam& p = layout.params()[i];
    const ParamSpec& spec = layout.spec(p);
    if (p.copy != CopyKind::primary) continue;
    if (spec.split == TpSplit::none && layout.coords().tp != 0) continue;
    Range own = layout.owned_slice(p);
    if (own.empty()) continue;
    for (OptimizerState st : kOptimizerStates) {
      CkptPiece c;
      c.name = spec.name;
      c.state = st;
      c.file = file_index;
      c.offset = offset;
      c.split = spec.split;
      c.tp_rank = layout.coords().tp;
      c.tp = layout.dims().tensor;
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
    << m.loader.epoch << YAML::Key << "position" << YAML::Value << m.loader.position;
  if (!m.loader.sources.empty()) {  // a blend: every source's own place
    e << YAML::Key << "sources" << YAML::Value << YAML::BeginSeq;
    for (const SourceState& s : m.loader.sources)
      e << YAML::BeginMap << YAML::Key << "path" << YAML::Value << s.path << YAML::Key << "epoch" << YAML::Value
        << s.epoch << YAML::Key << "position" << YAML::Value << s.position << YAML::EndMap;
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
  e << YAML::Key << "layout" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "data" << YAML::Value << m.dims.data << YAML::Key << "tensor" << YAML::Value << m.dims.tensor;
  e << YAML::Key << "pipeline" << YAML::Value << m.dims.pipeline << YAML::Key << "zero" << YAML::Value << m.zero;
  if (m.dims.interleaved()) e << YAML::Key << "virtual_stages" << YAML::Value << m.dims.virtual_stages;
  e << YAML::Key << "stages" << YAML::Value << YAML::Flow << m.stage_layers;
  e << YAML::EndMap;
  const GptConfig& c = m.model;
  e << YAML::Key << "model" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "n_layer" << YAML::Value << c.n_layer << YAML::Key << "n_head" << YAML::Value << c.n_head;
  e << YAML::Key << "d_model" << YAML::Value << c.d_model << YAML::Key << "vocab_size" << YAML::Value << c.vocab_size;
  e << YAML::Key << "padded_vocab" << YAML::Value << c.padded_vocab << YAML::Key << "max_seq_len" << YAML::Value
    << c.max_seq_len;
  e << YAML::Key << "arch" << YAML::Value << model_arch_name(c.arch);
  if (c.family().keys == ConfigKeys::llama) {
    e << YAML::Key << "n_kv_head" << YAML::Value << c.kv_heads() << YAML::Key << "ffn_dim" << YAML::Value
      << c.ffn_dim;
    e << YAML::Key << "norm_eps" << YAML::Value << c.norm_eps << YAML::Key << "rope_theta" << YAML::Value
      << c.rope_theta;
    const RopeScaling& rs = c.rope_scaling;
    e << YAML::Key << "rope_scaling" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "factor"
      << YAML::Value << rs.factor << YAML::Key << "low_freq_factor" << YAML::Value << rs.low_freq_factor
      << YAML::Key << "high_freq_factor" << YAML::Value << rs.high_freq_factor << YAML::Key << "original_context"
      << YAML::Value << rs.original_context << YAML::EndMap;
    e << YAML::Key << "tie_embeddings" << YAML::Value << c.tied() << YAML::Key << "qk_norm" << YAML::Value
      << (c.qk_norm == QkNorm::on);
  }
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
  return parse_manifest(read_manifest_text(path), path);
}

CkptManifest parse_manifest(const std::string& text, const std::string& path) {
  CkptManifest m;
  try {
    const YAML::Node n = YAML::Load(text);
    if (!n.IsMap()) throw InputError(path + ": malformed checkpoint manifest: not a YAML map");
    m.format = field<int>(n, "format", path, "");
    if (m.format != kCheckpointFormat)
      throw InputError(path + ": checkpoint format " + std::to_string(m.format) + " is not supported; valid: " +
                       std::to_string(kCheckpointFormat));
    m.program_version = field<std::string>(n, "program_version", path, "");
    m.step = field<int64_t>(n, "step", path, "");
    m.seed = field<uint64_t>(n, "seed", path, "");
    if (n["run"]) m.run = field<std::string>(n, "run", path, "");
    if (n["loss"]) m.loss = field<double>(n, "loss", path, "");
    const YAML::Node loader = section(n, "loader", path);
    m.loader.epoch = field<int64_t>(loader, "epoch", path, "loader");
    m.loader.position = field<int64_t>(loader, "position", path, "loader");
    if (loader["sources"]) {
      const YAML::Node sources = sequence(loader, "sources", path);
      for (size_t i = 0; i < sources.size(); ++i) {
        const std::string entry = "loader.sources[" + std::to_string(i) + "]";
        m.loader.sources.push_back(SourceState{field<std::string>(sources[i], "path", path, entry),
                                               field<int64_t>(sources[i], "epoch", path, entry),
                                               field<int64_t>(sources[i], "position", path, entry)});
      }
    }
    const YAML::Node l = section(n, "layout", path);
    m.dims.data = field<int>(l, "data", path, "layout");
    m.dims.tensor = field<int>(l, "tensor", path, "layout");
    m.dims.pipeline = field<int>(l, "pipeline", path, "layout");
    m.zero = field<int>(l, "zero", path, "layout");
    if (l["virtual_stages"]) m.dims.virtual_stages = field<int>(l, "virtual_stages", path, "layout");
    m.stage_layers = field<std::vector<int>>(l, "stages", path, "layout");
    const YAML::Node c = section(n, "model", path);
    m.model.n_layer = field<int>(c, "n_layer", path, "model");
    m.model.n_head = field<int>(c, "n_head", path, "model");
    m.model.d_model = field<int>(c, "d_model", path, "model");
    m.model.vocab_size = field<int>(c, "vocab_size", path, "model");
    m.model.padded_vocab = field<int>(c, "padded_vocab", path, "model");
    m.model.max_seq_len = field<int>(c, "max_seq_len", path, "model");
    // Manifests written before llama existed have no arch: they are gpt2 (kDefaultArch).
    const std::string arch =
        c["arch"] ? field<std::string>(c, "arch", path, "model") : model_arch_name(kDefaultArch);
    const std::optional<ModelArch> known = enum_from_name(kModelArchNames, arch);
    if (!known)
      throw InputError(path + ": malformed checkpoint manifest: model.arch \"" + excerpt(arch) +
                       "\"; valid: " + model_arch_choices());
    m.model.arch = *known;
    if (m.model.family().keys == ConfigKeys::llama) {
      m.model.n_kv_head = field<int>(c, "n_kv_head", path, "model");
      m.model.ffn_dim = field<int>(c, "ffn_dim", path, "model");
      m.model.norm_eps = field<float>(c, "norm_eps", path, "model");
      m.model.rope_theta = field<float>(c, "rope_theta", path, "model");
      const YAML::Node rs = section(c, "rope_scaling", path);
      m.model.rope_scaling.factor = field<float>(rs, "factor", path, "model.rope_scaling");
      m.model.rope_scaling.low_freq_factor = field<float>(rs, "low_freq_factor", path, "model.rope_scaling");
      m.model.rope_scaling.high_freq_factor = field<float>(rs, "high_freq_factor", path, "model.rope_scaling");
      m.model.rope_scaling.original_context = field<int>(rs, "original_context", path, "model.rope_scaling");
      m.model.tie = field<bool>(c, "tie_embeddings", path, "model") ? TiedEmbeddings::tied : TiedEmbeddings::untied;
      m.model.qk_norm = field<bool>(c, "qk_norm", path, "model") ? QkNorm::on : QkNorm::off;
    }
    m.recipe_yaml = field<std::string>(n, "recipe", path, "");
    for (const YAML::Node& f : sequence(n, "files", path)) {
      const std::string entry = "files[" + std::to_string(m.files.size()) + "]";
      CkptFile x;
      x.name = field<std::string>(f, "name", path, entry);
      x.rank = field<int>(f, "rank", path, entry);
      x.bytes = field<int64_t>(f, "bytes", path, entry);
      x.xxh64 = parse_hex64(field<std::string>(f, "xxh64", path, entry), path + ": " + entry + ".xxh64");
      m.files.push_back(x);
    }
    for (const YAML::Node& p : sequence(n, "pieces", path)) {
      const std::string entry = "pieces[" + std::to_string(m.pieces.size()) + "]";
      CkptPiece x;
      x.name = field<std::string>(p, "name", path, entry);
      x.state = parse_state(field<std::string>(p, "state", path, entry), path + ": " + entry + ".state");
      x.file = field<int>(p, "file", path, entry);
      x.offset = field<int64_t>(p, "offset", path, entry);
      x.split = parse_split(field<std::string>(p, "split", path, entry), path + ": " + entry + ".split");
      x.tp_rank = field<int>(p, "tp_rank", path, entry);
      x.tp = field<int>(p, "tp", path, entry);
      x.begin = field<int64_t>(p, "begin", path, entry);
      x.end = field<int64_t>(p, "end", path, entry);
      m.pieces.push_back(x);
    }
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": malformed checkpoint manifest: " + e.what());
  }
  validate_manifest(m, path);
  return m;
}

}  // namespace trainer
