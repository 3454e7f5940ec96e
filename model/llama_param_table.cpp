// The Llama parameter table (Hugging Face's LlamaForCausalLM names; Qwen3's q_norm/k_norm for
// qk_norm). No biases. Initialisation as for GPT-2 (normal 0.02, the output projections of
// each block scaled by 1/sqrt(2 n_layer), norms at one); the padding rows of the token table
// and the untied head are zero.
#include <string>

#include "model/param_table.h"

namespace trainer {

std::vector<ParamSpec> llama_param_table(const GptConfig& cfg) {
  const int64_t C = cfg.d_model, D = cfg.head_dim(), Hq = int64_t(cfg.n_head) * D,
                Hkv = int64_t(cfg.kv_heads()) * D, F = cfg.ffn_dim;
  std::vector<ParamSpec> t;
  auto add = [&](std::string name, std::vector<int64_t> shape, TpSplit split, int unit, WeightDecay decay,
                 InitKind init) { t.push_back({std::move(name), std::move(shape), split, unit, decay, init}); };
  constexpr WeightDecay kDecay = WeightDecay::on, kNoDecay = WeightDecay::off;
  add(embedding_name(cfg), {cfg.padded_vocab, C}, TpSplit::rows, unit_embedding(), kDecay, InitKind::normal_vocab);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = layer_prefix(cfg, l);
    const int u = block_unit(cfg, l);
    add(h + "input_layernorm.weight", {C}, TpSplit::none, u, kNoDecay, InitKind::ones);
    // q, k, v adjacent (one fused product), each split by heads.
    add(h + "self_attn.q_proj.weight", {Hq, C}, TpSplit::rows, u, kDecay, InitKind::normal);
    add(h + "self_attn.k_proj.weight", {Hkv, C}, TpSplit::rows, u, kDecay, InitKind::normal);
    add(h + "self_attn.v_proj.weight", {Hkv, C}, TpSplit::rows, u, kDecay, InitKind::normal);
    if (cfg.qk_norm == QkNorm::on) {
      add(h + "self_attn.q_norm.weight", {D}, TpSplit::none, u, kNoDecay, InitKind::ones);
      add(h + "self_attn.k_norm.weight", {D}, TpSplit::none, u, kNoDecay, InitKind::ones);
      t[t.size() - 2].tp_grad = t[t.size() - 1].tp_grad = TpGrad::per_head;
    }
    add(h + "self_attn.o_proj.weight", {C, Hq}, TpSplit::cols, u, kDecay, InitKind::normal_residual);
    add(h + "post_attention_layernorm.weight", {C}, TpSplit::none, u, kNoDecay, InitKind::ones);
    // gate and up adjacent (one fused product).
    add(h + "mlp.gate_proj.weight", {F, C}, TpSplit::rows, u, kDecay, InitKind::normal);
    add(h + "mlp.up_proj.weight", {F, C}, TpSplit::rows, u, kDecay, InitKind::normal);
    add(h + "mlp.down_proj.weight", {C, F}, TpSplit::cols, u, kDecay, InitKind::normal_residual);
  }
  add(final_norm_weight_name(cfg), {C}, TpSplit::none, unit_final_norm(cfg), kNoDecay, InitKind::ones);
  if (!cfg.tied())
    add(head_name(cfg), {cfg.padded_vocab, C}, TpSplit::rows, unit_lm_head(cfg), kDecay, InitKind::normal_vocab);
  return t;
}

}  // namespace trainer
