// The llama family's description (see model_family.h): pre-RMSNorm blocks without biases,
// rotary positions (optionally with Llama 3.1's frequency scaling), a SwiGLU MLP of width
// ffn_dim, grouped-query attention, optional per-head RMSNorm of q and k, a tied or untied head;
// LlamaForCausalLM's names and config.json. Its table is llama_param_table.cpp, its block
// llama_block.cpp.
#include <fmt/core.h>

#include "model/block_code.h"
#include "model/model_family.h"
#include "model/param_table.h"

namespace trainer {

namespace {

GptConfig read_llama_config(const HfConfigSource& r) {
  GptConfig c;
  c.arch = ModelArch::llama;
  c.n_layer = r.integer("num_hidden_layers", 0, HfKey::required, 1);
  c.n_head = r.integer("num_attention_heads", 0, HfKey::required, 1);
  c.n_kv_head = r.integer("num_key_value_heads", c.n_head, HfKey::optional, 1);
  c.d_model = r.integer("hidden_size", 0, HfKey::required, 1);
  c.ffn_dim = r.integer("intermediate_size", 0, HfKey::required, 1);
  c.vocab_size = r.integer("vocab_size", 0, HfKey::required, 1);
  c.max_seq_len = r.integer("max_position_embeddings", 0, HfKey::required, 1);
  c.norm_eps = float(r.number("rms_norm_eps", 1e-6, HfNumber::positive));
  c.rope_theta = float(r.number("rope_theta", 10000.0, HfNumber::positive));
  c.tie = r.boolean("tie_word_embeddings", false) ? TiedEmbeddings::tied : TiedEmbeddings::untied;
  const std::string act = r.string("hidden_act", "silu");
  r.require("hidden_act", act == "silu", act, "silu");
  r.require("attention_bias", !r.boolean("attention_bias", false), "true", "false");
  r.require("mlp_bias", !r.boolean("mlp_bias", false), "true", "false");
  // Heads narrower or wider than hidden_size / heads (Qwen3's head_dim) are another model.
  r.require("hidden_size", c.d_model % c.n_head == 0, std::to_string(c.d_model),
            "a multiple of num_attention_heads " + std::to_string(c.n_head));
  {
    const int head_dim = r.integer("head_dim", c.d_model / c.n_head, HfKey::optional, 1);
    r.require("head_dim", head_dim == c.d_model / c.n_head, std::to_string(head_dim),
              "hidden_size / num_attention_heads");
  }
  if (const std::unique_ptr<HfConfigSource> s = r.object("rope_scaling")) {
    const std::string kind = s->string("rope_type", s->string("type", ""));
    r.require("rope_scaling", kind == "llama3", "rope_type '" + kind + "'", "null or rope_type llama3");
    c.rope_scaling.factor = float(s->number("factor", 0, HfNumber::non_negative));
    c.rope_scaling.low_freq_factor = float(s->number("low_freq_factor", 1, HfNumber::positive));
    c.rope_scaling.high_freq_factor = float(s->number("high_freq_factor", 4, HfNumber::positive));
    c.rope_scaling.original_context = s->integer("original_max_position_embeddings", 8192, HfKey::optional, 1);
  }
  return c;
}

HfConfigEntries write_llama_config(const GptConfig& c) {
  const RopeScaling& rs = c.rope_scaling;
  return {{"architectures", "[\"LlamaForCausalLM\"]"},
          {"model_type", "\"llama\""},
          {"num_hidden_layers", std::to_string(c.n_layer)},
          {"num_attention_heads", std::to_string(c.n_head)},
          {"num_key_value_heads", std::to_string(c.kv_heads())},
          {"hidden_size", std::to_string(c.d_model)},
          {"head_dim", std::to_string(c.head_dim())},
          {"intermediate_size", std::to_string(c.ffn_dim)},
          {"max_position_embeddings", std::to_string(c.max_seq_len)},
          {"hidden_act", "\"silu\""},
          {"rms_norm_eps", fmt::format("{}", c.norm_eps)},
          {"rope_theta", fmt::format("{}", c.rope_theta)},
          {"rope_scaling", rs.enabled() ? fmt::format("{{\"rope_type\": \"llama3\", \"factor\": {}, "
                                                      "\"low_freq_factor\": {}, \"high_freq_factor\": {}, "
                                                      "\"original_max_position_embeddings\": {}}}",
                                                      rs.factor, rs.low_freq_factor, rs.high_freq_factor,
                                                      rs.original_context)
                                        : "null"},
          {"attention_bias", "false"},
          {"mlp_bias", "false"},
          {"initializer_range", fmt::format("{}", c.init_std)},
          {"tie_word_embeddings", c.tied() ? "true" : "false"}};
}

// q, k, v and gate, up as the fused products take them.
BlockParams llama_block_params(const LayerTensors& v, const BlockDims& d) {
  BlockParams p;
  p.ln1w = v("input_layernorm.weight");
  p.qkvw = v.fused("self_attn.q_proj.weight", "self_attn.v_proj.weight", d.Ql);
  p.projw = v("self_attn.o_proj.weight");
  p.ln2w = v("post_attention_layernorm.weight");
  p.fcw = v.fused("mlp.gate_proj.weight", "mlp.up_proj.weight", d.fc);
  p.fcprojw = v("mlp.down_proj.weight");
  if (d.qk_norm == QkNorm::on) {
    p.qnormw = v("self_attn.q_norm.weight");
    p.knormw = v("self_attn.k_norm.weight");
  }
  return p;
}

constexpr BlockCode kLlamaBlock{llama_block_params, llama_block_forward, llama_block_backward};

}  // namespace

const ModelFamily& llama_family() {
  static const ModelFamily family{
      ModelArch::llama,
      NormKind::rmsnorm,
      MlpKind::swiglu,
      MlpWidth::ffn_dim,
      Positions::rotary,
      HeadTying::optional,
      ConfigKeys::llama,
      LlmcFiles::unsupported,
      FamilyNames{"model.embed_tokens.weight", nullptr, "model.norm.weight", nullptr, "model.layers.", "embed_tokens",
                  nullptr, "norm", "layers."},
      HfFamily{"llama", read_llama_config, write_llama_config, {}, {".rotary_emb.inv_freq"}},
      add_llama_layer_params,
      llama_param_table,
      &kLlamaBlock};
  return family;
}

}  // namespace trainer
