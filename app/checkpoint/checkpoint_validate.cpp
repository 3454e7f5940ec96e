// Checkpoint manifest validation (see checkpoint_validate.h).
#include "app/checkpoint/checkpoint_validate.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"
#include "parallel/zero_policy.h"

namespace trainer {

namespace {

// "<manifest>: <entry> <value>: <rule>".
[[noreturn]] void bad(const std::string& path, const std::string& entry, const std::string& value,
                      const std::string& rule) {
  throw InputError(path + ": " + entry + " " + value + ": " + rule);
}

template <typename T>
[[noreturn]] void bad_number(const std::string& path, const std::string& entry, T value, const std::string& rule) {
  bad(path, entry, std::to_string(value), rule);
}

// A name as text in quotes, control characters (NUL included) escaped.
std::string quoted(const std::string& s) {
  const Excerpt e = split_excerpt(s);
  std::string out = "'";
  for (char ch : e.shown) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += ch;
  }
  return out + "'" + e.tail;
}

void check_header(const CkptManifest& m, const std::string& path) {
  if (m.format != kCheckpointFormat)
    bad_number(path, "format", m.format,
               fmt::format("checkpoint format {} is not supported; valid: {}", m.format, kCheckpointFormat));
  if (m.step < 0) bad_number(path, "step", m.step, "a checkpoint's step must be >= 0");
  if (m.loader.epoch < 0) bad_number(path, "loader.epoch", m.loader.epoch, "must be >= 0");
  if (m.loader.position < 0) bad_number(path, "loader.position", m.loader.position, "must be >= 0");
  for (size_t i = 0; i < m.loader.sources.size(); ++i) {
    const SourceState& s = m.loader.sources[i];
    const std::string entry = fmt::format("loader.sources[{}].", i);
    if (s.epoch < 0) bad_number(path, entry + "epoch", s.epoch, "must be >= 0");
    if (s.position < 0) bad_number(path, entry + "position", s.position, "must be >= 0");
  }
  const std::pair<const char*, int> degrees[] = {
      {"data", m.dims.data}, {"tensor", m.dims.tensor}, {"pipeline", m.dims.pipeline}};
  for (const auto& [key, v] : degrees)
    if (v < 1 || v > kMaxCkptDegree)
      bad_number(path, std::string("layout.") + key, v,
                 fmt::format("a parallel degree must be in [1, {}]", kMaxCkptDegree));
  if (!is_zero_stage(m.zero)) bad_number(path, "layout.zero", m.zero, "valid: 0, 1, 2 or 3");
}

void check_model(const GptConfig& c, const std::string& path) {
  const std::tuple<const char*, int, int> dims[] = {
      {"n_layer", c.n_layer, kMaxCkptLayers},          {"n_head", c.n_head, kMaxCkptHeads},
      {"d_model", c.d_model, kMaxCkptDModel},          {"vocab_size", c.vocab_size, kMaxCkptVocab},
      {"padded_vocab", c.padded_vocab, kMaxCkptVocab}, {"max_seq_len", c.max_seq_len, kMaxCkptSeqLen}};
  for (const auto& [key, v, limit] : dims)
    if (v < 1 || v > limit)
      bad_number(path, std::string("model.") + key, v,
                 fmt::format("must be in [1, {}] (the checkpoint reader's limit)", limit));
  if (c.d_model % c.n_head != 0)
    bad_number(path, "model.d_model", c.d_model, fmt::format("must be a multiple of model.n_head {}", c.n_head));
  if (c.family().keys == ConfigKeys::llama) {
    if (c.n_kv_head < 1 || c.n_head % c.n_kv_head != 0)
      bad_number(path, "model.n_kv_head", c.n_kv_head, fmt::format("must divide model.n_head {}", c.n_head));
    if ((c.d_model / c.n_head) % 2 != 0)
      bad_number(path, "model.d_model", c.d_model, "must give an even head size (rotary embeddings)");
    if (c.ffn_dim < 1 || c.ffn_dim > kMaxCkptDModel * 16)
      bad_number(path, "model.ffn_dim", c.ffn_dim,
                 fmt::format("must be in [1, {}] (the checkpoint reader's limit)", kMaxCkptDModel * 16));
    if (!(c.norm_eps > 0) || !(c.rope_theta > 0))
      bad_number(path, c.norm_eps > 0 ? "model.rope_theta" : "model.norm_eps",
                 c.norm_eps > 0 ? double(c.rope_theta) : double(c.norm_eps), "must be > 0");
    const RopeScaling& rs = c.rope_scaling;
    if (rs.enabled() && (!(rs.factor >= 1) || !(rs.high_freq_factor > rs.low_freq_factor) ||
                         !(rs.low_freq_factor > 0) || rs.original_context < 1))
      bad_number(path, "model.rope_scaling.factor", rs.factor,
                 "with factor >= 1 needs 0 < low_freq_factor < high_freq_factor and original_context >= 1");
  }
  if (c.vocab_size > c.padded_vocab)
    bad_number(path, "model.vocab_size", c.vocab_size,
               fmt::format("must be at most model.padded_vocab {}", c.padded_vocab));
  if (c.num_params() > kMaxCkptParams)
    bad_number(
        path, "model", c.num_params(),
        fmt::format("parameters; at most {} (2^40) are allowed (the checkpoint reader's limit)", kMaxCkptParams));
}

void check_stages(const CkptManifest& m, const std::string& path) {
  const int chunks = m.dims.virtual_stages;  // untrusted: checked before any question is asked
  if (chunks < 1 || chunks > m.model.n_layer)
    bad_number(path, "layout.virtual_stages", chunks,
               fmt::format("valid: 1 to model.n_layer {}", m.model.n_layer));
  if (int64_t(m.stage_layers.size()) != int64_t(m.dims.pipeline) * m.dims.virtual_stages)
    bad_number(path, "layout.stages: entries", m.stage_layers.size(),
               fmt::format("one entry per pipeline stage and virtual stage; layout.pipeline is {}, "
                           "layout.virtual_stages {}",
                           m.dims.pipeline, m.dims.virtual_stages));
  int64_t sum = 0;
  for (size_t i = 0; i < m.stage_layers.size(); ++i) {
    if (m.stage_layers[i] < 1)
      bad_number(path, fmt::format("layout.stages[{}]", i), m.stage_layers[i],
                 "every pipeline stage holds at least one layer");
    sum += m.stage_layers[i];
  }
  if (sum != m.model.n_layer)
    bad_number(path, "layout.stages: layers", sum,
               fmt::format("the stages must hold model.n_layer {} layers", m.model.n_layer));
}

bool plain_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos && n.find('\0') == std::string::npos;
}

void check_files(const CkptManifest& m, const std::string& path) {
  // In 64 bits: each degree may be up to kMaxCkptDegree here, their product past int.
  const int64_t world = int64_t(m.dims.data) * m.dims.tensor * m.dims.pipeline;
  if (int64_t(m.files.size()) != world)
    bad_number(path, "files: entries", m.files.size(),
               fmt::format("a checkpoint holds one file per rank; layout data {} x tensor {} x pipeline {} = {}",
                           m.dims.data, m.dims.tensor, m.dims.pipeline, world));
  std::vector<int> file_of_rank(size_t(world), -1);
  std::unordered_map<std::string, int> file_of_name;
  for (size_t i = 0; i < m.files.size(); ++i) {
    const CkptFile& f = m.files[i];
    const std::string entry = fmt::format("files[{}]", i);
    if (!plain_name(f.name))
      bad(path, entry + ".name", quoted(f.name),
          "a checkpoint file must be a plain name inside its directory (not empty, no '/', not '.' or '..', "
          "no NUL)");
    const auto named = file_of_name.emplace(f.name, int(i));
    if (!named.second)
      bad(path, entry + ".name", quoted(f.name),
          fmt::format("also the name of files[{}]; each file is listed once", named.first->second));
    if (f.rank < 0 || f.rank >= world)
      bad_number(path, entry + ".rank", f.rank, fmt::format("valid: 0 to {} (the layout's ranks)", world - 1));
    if (file_of_rank[size_t(f.rank)] >= 0)
      bad_number(path, entry + ".rank", f.rank,
                 fmt::format("also the rank of files[{}]; one file per rank", file_of_rank[size_t(f.rank)]));
    file_of_rank[size_t(f.rank)] = int(i);
    if (f.bytes < 0) bad_number(path, entry + ".bytes", f.bytes, "a file's size must be >= 0");
  }
}

// Whether tp_runs can cut `s` into `tp` equal slices.
bool tp_divides(const ParamSpec& s, int tp) {
  if (s.split == TpSplit::none || tp == 1) return true;
  switch (s.split) {
    case TpSplit::rows:
      return s.shape[0] % tp == 0;
    case TpSplit::cols:
      return s.shape.size() == 2 && s.shape[1] % tp == 0;
    case TpSplit::qkv_rows:
      return s.shape[0] % (int64_t(3) * tp) == 0;
    case TpSplit::none:
      break;
  }
  return true;
}

int64_t local_numel(const ParamSpec& s, int tp) { return s.split == TpSplit::none ? s.numel() : s.numel() / tp; }

struct Stored {  // a non-empty piece as a range of its local slice, keyed for sorting
  int spec, state, tp_rank;
  int64_t begin, end;
  int piece;
};

struct Bytes {  // a non-empty piece as a byte range of its file
  int file;
  int64_t begin, end;
  int piece;
};

// Each piece on its own; returns the non-empty ones for the cross-piece checks.
void check_each_piece(const CkptManifest& m, const std::vector<ParamSpec>& table, const std::string& path,
                      std::vector<Stored>& stored, std::vector<Bytes>& bytes) {
  std::unordered_map<std::string, int> spec_of;
  for (size_t i = 0; i < table.size(); ++i) spec_of.emplace(table[i].name, int(i));
  const int files = int(m.files.size());
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    const CkptPiece& p = m.pieces[i];
    const std::string e = fmt::format("pieces[{}]", i);
    if (p.file < 0 || p.file >= files)
      bad_number(path, e + ".file", p.file, fmt::format("no such file; valid: 0 to {}", files - 1));
    const auto it = spec_of.find(p.name);
    if (it == spec_of.end()) bad(path, e + ".name", quoted(p.name), "no such tensor in the manifest's model");
    const ParamSpec& s = table[size_t(it->second)];
    if (p.split != s.split)
      bad(path, e + ".split", tp_split_name(p.split),
          fmt::format("tensor {} is split {}", s.name, tp_split_name(s.split)));
    if (p.tp != m.dims.tensor) bad_number(path, e + ".tp", p.tp, fmt::format("must equal layout.tensor {}", m.dims.tensor));
    if (p.tp_rank < 0 || p.tp_rank >= p.tp)
      bad_number(path, e + ".tp_rank", p.tp_rank,
                 fmt::format("valid: 0 to {} (tensor-parallel degree {})", p.tp - 1, p.tp));
    if (s.split == TpSplit::none && p.tp_rank != 0)
      bad_number(path, e + ".tp_rank", p.tp_rank,
                 fmt::format("tensor {} is not split: tensor-parallel rank 0 stores it", s.name));
    const int64_t local = local_numel(s, p.tp);
    const std::string slice = fmt::format("{}'s tensor-parallel slice has {} elements", s.name, local);
    if (p.begin < 0 || p.begin > local)
      bad_number(path, e + ".begin", p.begin, fmt::format("valid: 0 to {}; {}", local, slice));
    if (p.end < p.begin || p.end > local)
      bad_number(path, e + ".end", p.end, fmt::format("valid: begin {} to {}; {}", p.begin, local, slice));
    const CkptFile& f = m.files[size_t(p.file)];
    const int64_t length = (p.end - p.begin) * 4;
    if (p.offset < 0 || p.offset > f.bytes || length > f.bytes - p.offset)
      bad_number(path, e + ".offset", p.offset,
                 fmt::format("its {} bytes must lie within {} ({} bytes)", length, f.name, f.bytes));
    if (length == 0) continue;
    stored.push_back({it->second, int(p.state), p.tp_rank, p.begin, p.end, int(i)});
    bytes.push_back({p.file, p.offset, p.offset + length, int(i)});
  }
}

void check_bytes_disjoint(const CkptManifest& m, std::vector<Bytes>& bytes, const std::string& path) {
  std::sort(bytes.begin(), bytes.end(), [](const Bytes& a, const Bytes& b) {
    return std::tie(a.file, a.begin, a.piece) < std::tie(b.file, b.begin, b.piece);
  });
  for (size_t i = 1; i < bytes.size(); ++i) {
    const Bytes &a = bytes[i - 1], &b = bytes[i];
    if (a.file == b.file && b.begin < a.end)
      bad_number(path, fmt::format("pieces[{}].offset", b.piece), b.begin,
                 fmt::format("its bytes overlap those of pieces[{}] (bytes {} to {} of {}); every stored value has "
                             "its own bytes",
                             a.piece, a.begin, a.end, m.files[size_t(a.file)].name));
  }
}

// Walks (tensor, state, tp_rank) in order alongside the sorted pieces; the first missing range
// stops the walk, so it visits at most one group more than there are pieces.
void check_coverage(const CkptManifest& m, const std::vector<ParamSpec>& table, std::vector<Stored>& stored,
                    const std::string& path) {
  std::sort(stored.begin(), stored.end(), [](const Stored& a, const Stored& b) {
    return std::tie(a.spec, a.state, a.tp_rank, a.begin) < std::tie(b.spec, b.state, b.tp_rank, b.begin);
  });
  size_t at = 0;
  for (int si = 0; si < int(table.size()); ++si) {
    const ParamSpec& s = table[size_t(si)];
    const int ranks = s.split == TpSplit::none ? 1 : m.dims.tensor;
    const int64_t local = local_numel(s, m.dims.tensor);
    for (OptimizerState state : kOptimizerStates) {
      for (int r = 0; r < ranks; ++r) {
        const std::string what = fmt::format("{} ({}, tp_rank {})", s.name, optimizer_state_name(state), r);
        int64_t cursor = 0;
        int last = -1;
        for (; at < stored.size(); ++at) {
          const Stored& x = stored[at];
          if (x.spec != si || x.state != int(state) || x.tp_rank != r) break;
          if (x.begin < cursor)
            bad(path, fmt::format("pieces[{}] and pieces[{}]", last, x.piece),
                fmt::format("[{}, {})", x.begin, std::min(cursor, x.end)),
                fmt::format("both store these elements of {}; every element is stored exactly once", what));
          if (x.begin > cursor) break;
          cursor = x.end;
          last = x.piece;
        }
        if (cursor != local) {
          const int64_t gap_end =
              at < stored.size() && stored[at].spec == si && stored[at].state == int(state) && stored[at].tp_rank == r
                  ? stored[at].begin
                  : local;
          bad(path, "pieces", fmt::format("[{}, {})", cursor, gap_end),
              fmt::format("no piece stores these elements of {} ({} in its slice); the pieces must cover every "
                          "element",
                          what, local));
        }
      }
    }
  }
}

void check_pieces(const CkptManifest& m, const std::string& path) {
  const std::vector<ParamSpec> table = param_table(m.model);
  for (const ParamSpec& s : table)
    if (!tp_divides(s, m.dims.tensor))
      bad_number(path, "layout.tensor", m.dims.tensor,
                 fmt::format("tensor {} [{}] (split {}) cannot be cut into {} equal slices", s.name,
                             fmt::join(s.shape, ", "), tp_split_name(s.split), m.dims.tensor));
  std::vector<Stored> stored;
  std::vector<Bytes> bytes;
  check_each_piece(m, table, path, stored, bytes);
  check_bytes_disjoint(m, bytes, path);
  check_coverage(m, table, stored, path);
}

}  // namespace

void validate_manifest(const CkptManifest& m, const std::string& path) {
  check_header(m, path);
  check_model(m.model, path);
  check_stages(m, path);
  check_files(m, path);
  check_pieces(m, path);
}

}  // namespace trainer
