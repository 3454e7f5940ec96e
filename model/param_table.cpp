// The GPT-2 parameter table, unit names, tensor-parallel slicing and initial values (the
// Llama table is in llama_param_table.cpp).
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

int64_t GptConfig::block_params() const {
  const int64_t C = d_model;
  if (arch == ModelArch::gpt2) return 12 * C * C + 13 * C;
  const int64_t D = head_dim(), kv = int64_t(kv_heads()) * D, F = ffn_dim;
  return 2 * C + 2 * C * C + 2 * kv * C + 3 * F * C + (qk_norm == QkNorm::on ? 2 * D : 0);
}

int64_t GptConfig::num_params() const {
  const int64_t C = d_model, V = padded_vocab;
  const int64_t tables = V * C * (tied() ? 1 : 2) + (has_position_table() ? int64_t(max_seq_len) * C : 0);
  return tables + int64_t(n_layer) * block_params() + final_norm_params();
}

int64_t GptConfig::num_params_no_wpe() const {
  return num_params() - (has_position_table() ? int64_t(max_seq_len) * d_model : 0);
}

int64_t llama_ffn_dim64(int d_model, int multiple_of) {
  const int64_t hidden = 2 * (4 * int64_t(d_model)) / 3;
  const int64_t m = multiple_of > 0 ? multiple_of : 1;
  return (hidden + m - 1) / m * m;
}

int unit_count(const GptConfig& c) { return unit_final_norm(c) + (c.tied() ? 1 : 2); }

std::string unit_name(const GptConfig& c, int unit) {
  const bool gpt2 = c.arch == ModelArch::gpt2;
  if (unit == unit_embedding()) return gpt2 ? "wte" : "embed_tokens";
  if (unit == unit_position(c)) return "wpe";
  if (unit == unit_final_norm(c)) return gpt2 ? "ln_f" : "norm";
  if (unit == unit_lm_head(c)) return "lm_head";
  return (gpt2 ? "h." : "layers.") + std::to_string(unit - block_unit(c, 0));
}

const char* embedding_name(const GptConfig& c) {
  return c.arch == ModelArch::gpt2 ? "wte.weight" : "model.embed_tokens.weight";
}
const char* head_name(const GptConfig& c) { return c.tied() ? embedding_name(c) : "lm_head.weight"; }
const char* final_norm_weight_name(const GptConfig& c) {
  return c.arch == ModelArch::gpt2 ? "ln_f.weight" : "model.norm.weight";
}
const char* final_norm_bias_name(const GptConfig& c) { return c.arch == ModelArch::gpt2 ? "ln_f.bias" : nullptr; }
std::string layer_prefix(const GptConfig& c, int layer) {
  return (c.arch == ModelArch::gpt2 ? "h." : "model.layers.") + std::to_string(layer) + ".";
}

std::vector<ParamSpec> param_table(const GptConfig& config) {
  return config.arch == ModelArch::gpt2 ? gpt2_param_table(config) : llama_param_table(config);
}

std::vector<ParamSpec> gpt2_param_table(const GptConfig& cfg) {
  const int64_t C = cfg.d_model;
  std::vector<ParamSpec> t;
  auto add = [&](std::string name, std::vector<int64_t> shape, TpSplit split, int unit, WeightDecay decay,
                 InitKind init) { t.push_back({std::move(name), std::move(shape), split, unit, decay, init}); };
  add("wte.weight", {cfg.padded_vocab, C}, TpSplit::rows, 0, WeightDecay::on, InitKind::normal_vocab);
  add("wpe.weight", {cfg.max_seq_len, C}, TpSplit::none, 1, WeightDecay::on, InitKind::normal);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = layer_prefix(cfg, l);
    const int u = block_unit(cfg, l);
    add(h + "ln_1.weight", {C}, TpSplit::none, u, WeightDecay::off, InitKind::ones);
    add(h + "ln_1.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
    add(h + "attn.c_attn.weight", {3 * C, C}, TpSplit::qkv_rows, u, WeightDecay::on, InitKind::normal);
    add(h + "attn.c_attn.bias", {3 * C}, TpSplit::qkv_rows, u, WeightDecay::off, InitKind::zeros);
    add(h + "attn.c_proj.weight", {C, C}, TpSplit::cols, u, WeightDecay::on, InitKind::normal_residual);
    add(h + "attn.c_proj.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
    add(h + "ln_2.weight", {C}, TpSplit::none, u, WeightDecay::off, InitKind::ones);
    add(h + "ln_2.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
    add(h + "mlp.c_fc.weight", {4 * C, C}, TpSplit::rows, u, WeightDecay::on, InitKind::normal);
    add(h + "mlp.c_fc.bias", {4 * C}, TpSplit::rows, u, WeightDecay::off, InitKind::zeros);
    add(h + "mlp.c_proj.weight", {C, 4 * C}, TpSplit::cols, u, WeightDecay::on, InitKind::normal_residual);
    add(h + "mlp.c_proj.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
  }
  const int uf = cfg.n_layer + 2;
  add("ln_f.weight", {C}, TpSplit::none, uf, WeightDecay::off, InitKind::ones);
  add("ln_f.bias", {C}, TpSplit::none, uf, WeightDecay::off, InitKind::zeros);
  return t;
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
