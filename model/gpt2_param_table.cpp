// The GPT-2 parameter table (GPT2LMHeadModel's base-model names). Biases everywhere, a learned
// position table, the head tied to the token table. Every normal weight has std init_std, the
// output projections of each block scaled by 1/sqrt(2 n_layer); the padding rows of the token
// table are zero.
#include <string>

#include "model/param_table.h"

namespace trainer {

void add_gpt2_layer_params(const GptConfig& cfg, int layer, std::vector<ParamSpec>& t) {
  const int64_t C = cfg.d_model, F = cfg.mlp_dim();
  const std::string h = layer_prefix(cfg, layer);
  const int u = block_unit(cfg, layer);
  add_param(t, h + "ln_1.weight", {C}, TpSplit::none, u, WeightDecay::off, InitKind::ones);
  add_param(t, h + "ln_1.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
  add_param(t, h + "attn.c_attn.weight", {3 * C, C}, TpSplit::qkv_rows, u, WeightDecay::on, InitKind::normal);
  add_param(t, h + "attn.c_attn.bias", {3 * C}, TpSplit::qkv_rows, u, WeightDecay::off, InitKind::zeros);
  add_param(t, h + "attn.c_proj.weight", {C, C}, TpSplit::cols, u, WeightDecay::on, InitKind::normal_residual);
  add_param(t, h + "attn.c_proj.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
  add_param(t, h + "ln_2.weight", {C}, TpSplit::none, u, WeightDecay::off, InitKind::ones);
  add_param(t, h + "ln_2.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
  add_param(t, h + "mlp.c_fc.weight", {F, C}, TpSplit::rows, u, WeightDecay::on, InitKind::normal);
  add_param(t, h + "mlp.c_fc.bias", {F}, TpSplit::rows, u, WeightDecay::off, InitKind::zeros);
  add_param(t, h + "mlp.c_proj.weight", {C, F}, TpSplit::cols, u, WeightDecay::on, InitKind::normal_residual);
  add_param(t, h + "mlp.c_proj.bias", {C}, TpSplit::none, u, WeightDecay::off, InitKind::zeros);
}

std::vector<ParamSpec> gpt2_param_table(const GptConfig& cfg) {
  const int64_t C = cfg.d_model;
  std::vector<ParamSpec> t;
  add_param(t, embedding_name(cfg), {cfg.padded_vocab, C}, TpSplit::rows, unit_embedding(), WeightDecay::on,
      InitKind::normal_vocab);
  add_param(t, cfg.family().names.position_table, {cfg.max_seq_len, C}, TpSplit::none, unit_position(cfg),
            WeightDecay::on, InitKind::normal);
  for (int l = 0; l < cfg.n_layer; ++l) add_gpt2_layer_params(cfg, l, t);
  const int uf = unit_final_norm(cfg);
  add_param(t, final_norm_weight_name(cfg), {C}, TpSplit::none, uf, WeightDecay::off, InitKind::ones);
  add_param(t, final_norm_bias_name(cfg), {C}, TpSplit::none, uf, WeightDecay::off, InitKind::zeros);
  return t;
}

}  // namespace trainer
