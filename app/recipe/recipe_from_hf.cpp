// `model.from: DIR` (see recipe_from_hf.h).
#include "app/recipe/recipe_from_hf.h"

#include <vector>

#include <fmt/core.h>

#include "app/hf/hf_folder.h"
#include "app/recipe/recipe.h"
#include "app/recipe/recipe_checks.h"
#include "app/recipe/recipe_schema.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace {

std::string text(int v) { return std::to_string(v); }
std::string text(float v) { return fmt::format("{}", v); }
std::string text(bool v) { return v ? "true" : "false"; }
std::string text(ModelArch v) { return model_arch_name(v); }

}  // namespace

void apply_model_from(ModelConfig& m, KeyOrigins& origins) {
  const std::string& dir = m.from;
  if (!is_hf_folder(dir))
    throw ConfigError(fmt::format("{}: model.from {} is not a Hugging Face model folder (no {}/config.json); "
                                  "valid: a folder with config.json and safetensors (as `trainer ckpt export "
                                  "--format hf` writes), or \"\" for the recipe's own model keys",
                                  origins.of("model.from"), message_quote(dir), dir));
  const GptConfig f = gpt_config_from_hf(dir);
  const std::string file = dir + "/config.json";
  std::vector<std::string> diffs;
  std::vector<std::string> taken;  // their origin is the folder once all are read
  // The folder's value where the recipe is silent; a listed mismatch where it disagrees.
  auto take = [&](const char* key, auto& field, auto folder) {
    if (!origins.has(key)) {
      field = folder;
      taken.push_back(key);
      return;
    }
    if (field == folder) return;
    diffs.push_back(fmt::format("  {}: recipe {} ({}), folder {}", key, text(field), origins.of(key), text(folder)));
  };
  take("model.arch", m.arch, f.arch);
  take("model.n_layer", m.n_layer, f.n_layer);
  take("model.n_head", m.n_head, f.n_head);
  take("model.d_model", m.d_model, f.d_model);
  take("model.vocab_size", m.vocab_size, f.vocab_size);
  take("model.seq_len", m.seq_len, f.max_seq_len);
  if (f.family().keys == ConfigKeys::llama) {
    if (!origins.has("model.n_kv_head")) {
      m.n_kv_head = f.kv_heads();
      taken.push_back("model.n_kv_head");
    } else if ((m.n_kv_head == 0 ? m.n_head : m.n_kv_head) != f.kv_heads()) {  // 0 means n_head
      diffs.push_back(fmt::format("  model.n_kv_head: recipe {}{} ({}), folder {}", m.n_kv_head,
                                  m.n_kv_head == 0 ? " (= n_head " + text(m.n_head) + ")" : "",
                                  origins.of("model.n_kv_head"), f.kv_heads()));
    }
    take("model.ffn_dim", m.ffn_dim, f.ffn_dim);
    take("model.norm_eps", m.norm_eps, f.norm_eps);
    take("model.rope_theta", m.rope_theta, f.rope_theta);
    take("model.tie_embeddings", m.tie_embeddings, f.tied());
    take("model.qk_norm", m.qk_norm, false);
    take("model.rope_scaling.factor", m.rope_scaling.factor, f.rope_scaling.factor);
    if (f.rope_scaling.enabled()) {
      take("model.rope_scaling.low_freq_factor", m.rope_scaling.low_freq_factor, f.rope_scaling.low_freq_factor);
      take("model.rope_scaling.high_freq_factor", m.rope_scaling.high_freq_factor, f.rope_scaling.high_freq_factor);
      take("model.rope_scaling.original_context", m.rope_scaling.original_context, f.rope_scaling.original_context);
    }
  }
  if (diffs.empty()) {
    // The cross-field checks that follow (n_kv_head divides n_head, ...) then name the folder.
    for (const std::string& key : taken) origins.where[key] = file;
    return;
  }
  std::string msg = fmt::format("{}: model.from {} ({}/config.json) disagrees with the model keys the recipe sets:",
                                origins.of("model.from"), message_quote(dir), dir);
  for (const std::string& d : diffs) msg += "\n" + d;
  throw ConfigError(msg + "\nvalid: leave these keys out (model.from gives them) or set them to the folder's values");
}

}  // namespace trainer
