// Helpers for the checkpoint tests: a synthetic checkpoint written the way every rank of a
// layout would write it (rank_pieces), holding known values, without training anything.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_manifest.h"
#include "kernels/base/errors.h"
#include "model/stage_layout.h"
#include "tests/support/test_util.h"
#include "tests/support/tiny_gpt.h"

namespace trainer::testing {

// Small enough for tests, divisible for tensor 2 (heads, rows, padded vocabulary).
inline GptConfig ckpt_test_config() { return tiny_gpt_config(); }

// A distinct value for every (tensor, state, global element), so one read from the wrong place
// shows.
inline float ckpt_pattern(const std::string& name, OptimizerState state, int64_t index) {
  const float base = float(std::hash<std::string>{}(name) % 997);
  return base + 1000.0f * float(int(state)) + 0.001f * float(index);
}

// The message of the UserError that f() throws, or "(no error)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

using CkptTestLayout = ParallelDims;

inline void write_bytes_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::vector<char> read_bytes_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

// Writes dir/manifest.yaml and one rank file per rank of `layout` (rank order: tensor fastest,
// then data, then pipeline) holding ckpt_pattern values; returns the manifest.
inline CkptManifest write_synthetic_checkpoint(const std::string& dir, const GptConfig& config,
                                               CkptTestLayout layout, int64_t step = 7) {
  CkptManifest m;
  m.program_version = "test";
  m.step = step;
  m.seed = 42;
  m.loader.epoch = 1;
  m.loader.position = 96;
  m.dims = layout;
  m.zero = layout.data_parallel() ? 1 : 0;
  m.stage_layers = split_layers(config.n_layer, layout.pipeline, {});
  m.model = config;
  m.recipe_yaml = "model: {arch: gpt2}\ntrain:\n  steps: 9\n  optimizer: {lr: 0.001, betas: [0.9, 0.95]}\n";
  const std::vector<ParamSpec> table = param_table(config);
  const int world = layout.world();
  for (int rank = 0; rank < world; ++rank) {
    LayoutOptions o;
    o.dims = m.dims;
    o.at = m.dims.coords_of(rank);
    StageLayout stage(config, o);
    std::vector<float> values;
    for (const CkptPiece& p : rank_pieces(stage, rank)) {
      const ParamSpec& spec = stage.spec(stage.params()[p.local]);
      if (p.offset != int64_t(values.size()) * 4) throw std::runtime_error("rank_pieces offsets out of sequence");
      for (const Range& g : slice_to_global(tp_runs(spec, p.tp_rank, p.tp), p.begin, p.end))
        for (int64_t i = g.begin; i < g.end; ++i) values.push_back(ckpt_pattern(p.name, p.state, i));
      m.pieces.push_back(p);
    }
    CkptFile f;
    f.name = "rank_" + std::string(5 - std::to_string(rank).size(), '0') + std::to_string(rank) + ".bin";
    f.rank = rank;
    f.bytes = int64_t(values.size()) * 4;
    f.xxh64 = XXH64(values.data(), values.size() * 4, 0);
    std::vector<char> bytes(values.size() * 4);
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    write_bytes_file(dir + "/" + f.name, bytes);
    m.files.push_back(f);
  }
  write_text_file(dir + "/manifest.yaml", manifest_to_yaml(m));
  return m;
}

}  // namespace trainer::testing
