// The gpt2 family's description (see model_family.h): pre-LayerNorm blocks with biases, a
// learned position table, a GELU MLP of width 4C, multi-head attention, the head tied to the
// token table; GPT2LMHeadModel's names and config.json, whose Conv1D weights are stored
// (in, out). Its table is gpt2_param_table.cpp, its block gpt_block.cpp.
#include <fmt/core.h>

#include "model/block_code.h"
#include "model/model_family.h"
#include "model/param_table.h"

namespace trainer {

namespace {

GptConfig read_gpt2_config(const HfConfigSource& r) {
  GptConfig c;
  c.arch = ModelArch::gpt2;
  c.n_layer = r.integer("n_layer", 0, HfKey::required, 1);
  c.n_head = r.integer("n_head", 0, HfKey::required, 1);
  c.d_model = r.integer("n_embd", 0, HfKey::required, 1);
  c.vocab_size = r.integer("vocab_size", 0, HfKey::required, 1);
  c.max_seq_len = r.integer("n_positions", 0, HfKey::required, 1);
  const std::string act = r.string("activation_function", "gelu_new");
  r.require("activation_function", act == "gelu_new", act, "gelu_new (the tanh GELU)");
  const double eps = r.number("layer_norm_epsilon", 1e-5, HfNumber::positive);
  r.require("layer_norm_epsilon", eps == 1e-5, fmt::format("{}", eps), "1e-05");
  // 0: absent or null (a value must be >= 1); 4 x n_embd in 64 bits, since n_embd may be large.
  const int inner = r.integer("n_inner", 0, HfKey::optional, 1);
  r.require("n_inner", inner == 0 || inner == 4 * int64_t(c.d_model), std::to_string(inner), "null or 4 x n_embd");
  r.require("tie_word_embeddings", r.boolean("tie_word_embeddings", true), "false", "true");
  return c;
}

HfConfigEntries write_gpt2_config(const GptConfig& c) {
  return {{"architectures", "[\"GPT2LMHeadModel\"]"},
          {"model_type", "\"gpt2\""},
          {"n_layer", std::to_string(c.n_layer)},
          {"n_head", std::to_string(c.n_head)},
          {"n_embd", std::to_string(c.d_model)},
          {"n_positions", std::to_string(c.max_seq_len)},
          {"n_ctx", std::to_string(c.max_seq_len)},
          {"n_inner", "null"},
          {"activation_function", "\"gelu_new\""},
          {"layer_norm_epsilon", "1e-05"},
          {"initializer_range", fmt::format("{}", c.init_std)},
          {"resid_pdrop", "0.0"},
          {"embd_pdrop", "0.0"},
          {"attn_pdrop", "0.0"},
          {"scale_attn_weights", "true"},
          {"tie_word_embeddings", "true"}};
}

BlockParams gpt2_block_params(const LayerTensors& v, const BlockDims&) {
  return BlockParams{v("ln_1.weight"),       v("ln_1.bias"),       v("attn.c_attn.weight"), v("attn.c_attn.bias"),
                     v("attn.c_proj.weight"), v("attn.c_proj.bias"), v("ln_2.weight"),        v("ln_2.bias"),
                     v("mlp.c_fc.weight"),    v("mlp.c_fc.bias"),    v("mlp.c_proj.weight"),  v("mlp.c_proj.bias"),
                     Tensor{},                Tensor{}};
}

constexpr BlockCode kGpt2Block{gpt2_block_params, block_forward, block_backward};

}  // namespace

const ModelFamily& gpt2_family() {
  static const ModelFamily family{
      ModelArch::gpt2,
      NormKind::layernorm,
      MlpKind::gelu,
      MlpWidth::four_c,
      Positions::learned_table,
      HeadTying::always,
      ConfigKeys::base,
      LlmcFiles::supported,
      FamilyNames{"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias", "h.", "wte", "wpe", "ln_f", "h."},
      HfFamily{"gpt2",
               read_gpt2_config,
               write_gpt2_config,
               {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"},
               {".attn.bias", ".attn.masked_bias"}},
      add_gpt2_layer_params,
      gpt2_param_table,
      &kGpt2Block};
  return family;
}

}  // namespace trainer
