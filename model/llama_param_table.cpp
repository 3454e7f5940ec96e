// The Llama parameter table (Hugging Face's LlamaForCausalLM names; Qwen3's q_norm/k_norm for
// qk_norm). No biases. Initialisation as for GPT-2 (normal 0.02, the output projections of
// each block scaled by 1/sqrt(2 n_layer), norms at one); the padding rows of the token table
// and the untied head are zero.
#include <string>

#include "model/param_table.h"

namespace trainer {

namespace {

constexpr WeightDecay kDecay = WeightDecay::on, kNoDecay = WeightDecay::off;

}  // namespace

void add_llama_layer_params(const GptConfig& cfg, int layer, std::vector<ParamSpec>& t) {
  const int64_t C = cfg.d_model, D = cfg.head_dim(), Hq = int64_t(cfg.n_head) * D,
                Hkv = int64_t(cfg.kv_heads()) * D, F = cfg.mlp_dim();
  const std::string h = layer_prefix(cfg, layer);
  const int u = block_unit(cfg, layer);
  add_param(t, h + "input_layernorm.weight", {C}, TpSplit::none, u, kNoDecay, InitKind::ones);
  // q, k, v adjacent (one fused product), each split by heads.
  add_param(t, h + "self_attn.q_proj.weight", {Hq, C}, TpSplit::rows, u, kDecay, InitKind::normal);
  add_param(t, h + "self_attn.k_proj.weight", {Hkv, C}, TpSplit::rows, u, kDecay, InitKind::normal);
  add_param(t, h + "self_attn.v_proj.weight", {Hkv, C}, TpSplit::rows, u, kDecay, InitKind::normal);
  if (cfg.qk_norm == QkNorm::on) {
    add_param(t, h + "self_attn.q_norm.weight", {D}, TpSplit::none, u, kNoDecay, InitKind::ones);
    add_param(t, h + "self_attn.k_norm.weight", {D}, TpSplit::none, u, kNoDecay, InitKind::ones);
    t[t.size() - 2].tp_grad = t[t.size() - 1].tp_grad = TpGrad::per_head;
  }
  add_param(t, h + "self_attn.o_proj.weight", {C, Hq}, TpSplit::cols, u, kDecay, InitKind::normal_residual);
  add_param(t, h + "post_attention_layernorm.weight", {C}, TpSplit::none, u, kNoDecay, InitKind::ones);
  // gate and up adjacent (one fused product).
  add_param(t, h + "mlp.gate_proj.weight", {F, C}, TpSplit::rows, u, kDecay, InitKind::normal);
  add_param(t, h + "mlp.up_proj.weight", {F, C}, TpSplit::rows, u, kDecay, InitKind::normal);
  add_param(t, h + "mlp.down_proj.weight", {C, F}, TpSplit::cols, u, kDecay, InitKind::normal_residual);
}

std::vector<ParamSpec> llama_param_table(const GptConfig& cfg) {
  const int64_t C = cfg.d_model;
  std::vector<ParamSpec> t;
  add_param(t, embedding_name(cfg), {cfg.padded_vocab, C}, TpSplit::rows, unit_embedding(), kDecay,
            InitKind::normal_vocab);
  for (int l = 0; l < cfg.n_layer; ++l) add_llama_layer_params(cfg, l, t);
  add_param(t, final_norm_weight_name(cfg), {C}, TpSplit::none, unit_final_norm(cfg), kNoDecay, InitKind::ones);
  if (!cfg.tied())
    add_param(t, head_name(cfg), {cfg.padded_vocab, C}, TpSplit::rows, unit_lm_head(cfg), kDecay,
              InitKind::normal_vocab);
  return t;
}

}  // namespace trainer
