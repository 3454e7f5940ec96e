// The parameter table's names, units, tensor-parallel slicing and initial values (the
// families' tables are gpt2_param_table.cpp and llama_param_table.cpp).
#include "model/param_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "kernels/base/check.h"
#include "kernels/init_normal.h"
#include "model/rng.h"

namespace trainer {

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

void add_param(std::vector<ParamSpec>& table, std::string name, std::vector<int64_t> shape, TpSplit split, int unit,
               WeightDecay decay, InitKind init) {
  table.push_back({std::move(name), std::move(shape), split, unit, decay, init});
}

int unit_count(const GptConfig& c) { return unit_final_norm(c) + (c.tied() ? 1 : 2); }

std::string unit_name(const GptConfig& c, int unit) {
  const FamilyNames& n = c.family().names;
  if (unit == unit_embedding()) return n.embedding_unit;
  if (unit == unit_position(c)) return n.position_unit;
  if (unit == unit_final_norm(c)) return n.final_norm_unit;
  if (unit == unit_lm_head(c)) return "lm_head";
  return n.layer_unit + std::to_string(unit - block_unit(c, 0));
}

const char* embedding_name(const GptConfig& c) { return c.family().names.embedding; }
const char* head_name(const GptConfig& c) { return c.tied() ? embedding_name(c) : "lm_head.weight"; }
const char* final_norm_weight_name(const GptConfig& c) { return c.family().names.final_norm_weight; }
const char* final_norm_bias_name(const GptConfig& c) { return c.family().names.final_norm_bias; }
std::string layer_prefix(const GptConfig& c, int layer) {
  return c.family().names.layer_prefix + std::to_string(layer) + ".";
}

std::vector<ParamSpec> param_table(const GptConfig& config) { return config.family().param_table(config); }

LayerParamsLocal layer_params_local(const GptConfig& config, int tp) {
  std::vector<ParamSpec> layer;
  config.family().add_layer_params(config, 0, layer);
  LayerParamsLocal n;
  for (const ParamSpec& spec : layer) {
    int64_t local = 1;
    for (int64_t d : tp_local_shape(spec, tp)) local *= d;
    n.elements += local;
    n.largest = std::max(n.largest, local);
  }
  return n;
}

std::vector<Range> tp_runs(const ParamSpec& spec, int tp_rank, int tp) {
  const int64_t n = spec.numel();
  if (spec.split == TpSplit::none || tp == 1) return {{0, n}};
  const int64_t rows = spec.shape[0];
  const int64_t cols = spec.shape.size() > 1 ? spec.shape[1] : 1;
  switch (spec.split) {
    case TpSplit::rows: {
      TRAINER_CHECK(rows % tp == 0, spec.name + ": rows not divisible by tensor degree");
      int64_t per = rows / tp;
      return {{tp_rank * per * cols, (tp_rank + 1) * per * cols}};
    }
    case TpSplit::cols: {
      TRAINER_CHECK(cols % tp == 0 && spec.shape.size() == 2, spec.name + ": cols split");
      int64_t per = cols / tp;
      std::vector<Range> runs;
      runs.reserve(rows);
      for (int64_t r = 0; r < rows; ++r) runs.push_back({r * cols + tp_rank * per, r * cols + (tp_rank + 1) * per});
      return runs;
    }
    case TpSplit::qkv_rows: {
      TRAINER_CHECK(rows % (3 * tp) == 0, spec.name + ": qkv rows not divisible by 3 x tensor degree");
      int64_t part = rows / 3, per = part / tp;
      std::vector<Range> runs;
      for (int p = 0; p < 3; ++p)
        runs.push_back({(p * part + tp_rank * per) * cols, (p * part + (tp_rank + 1) * per) * cols});
      return runs;
    }
    case TpSplit::none: break;
  }
  return {{0, n}};
}

std::vector<int64_t> tp_local_shape(const ParamSpec& spec, int tp) {
  std::vector<int64_t> s = spec.shape;
  if (spec.split == TpSplit::rows || spec.split == TpSplit::qkv_rows) s[0] /= tp;
  if (spec.split == TpSplit::cols) s[1] /= tp;
  return s;
}

std::optional<NormalFill> init_normal_fill(const GptConfig& cfg, const ParamSpec& spec, uint64_t seed) {
  if (spec.init != InitKind::normal && spec.init != InitKind::normal_residual && spec.init != InitKind::normal_vocab)
    return std::nullopt;
  NormalFill f;
  f.key = seed ^ name_hash(spec.name);
  f.stream = uint64_t(RngPurpose::init);
  f.std = cfg.init_std;
  if (spec.init == InitKind::normal_residual) f.std /= std::sqrt(2.0 * cfg.n_layer);
  if (spec.init == InitKind::normal_vocab) f.zero_from = int64_t(cfg.vocab_size) * spec.shape[1];
  return f;
}

float init_constant(const ParamSpec& spec) { return spec.init == InitKind::ones ? 1.0f : 0.0f; }

// Element i of a normal parameter is normal i % 4 of Philox block i / 4 of its stream.
float init_value(const GptConfig& cfg, const ParamSpec& spec, uint64_t seed, int64_t index) {
  const std::optional<NormalFill> f = init_normal_fill(cfg, spec, seed);
  if (!f) return init_constant(spec);
  if (index >= f->zero_from) return 0.0f;
  return float(f->std * double(normal4_at(f->key, f->stream, uint64_t(index) >> 2)[size_t(index & 3)]));
}

void init_values(const GptConfig& cfg, const ParamSpec& spec, uint64_t seed, int64_t begin, int64_t n, float* out) {
  std::optional<NormalFill> f = init_normal_fill(cfg, spec, seed);
  if (!f) {
    std::fill(out, out + n, init_constant(spec));
    return;
  }
  f->first = begin;
  init_normal_host(out, n, *f);
}

}  // namespace trainer
