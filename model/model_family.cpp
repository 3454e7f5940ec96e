// The registry of family descriptions (see model_family.h): the one place that maps a
// ModelArch to its description.
#include "model/model_family.h"

#include "kernels/base/check.h"
#include "model/gpt_config.h"

namespace trainer {

int64_t ModelFamily::mlp_dim(const GptConfig& config) const {
  return mlp_width == MlpWidth::four_c ? 4 * int64_t(config.d_model) : config.ffn_dim;
}

const ModelFamily& family_of(ModelArch arch) {
  switch (arch) {
    case ModelArch::gpt2: return gpt2_family();
    case ModelArch::llama: return llama_family();
  }
  TRAINER_CHECK(false, "family_of: unknown ModelArch " + std::to_string(int(arch)));
  return gpt2_family();
}

std::vector<const ModelFamily*> model_families() {
  std::vector<const ModelFamily*> all;
  for (ModelArch arch : enum_values(kModelArchNames)) all.push_back(&family_of(arch));
  return all;
}

const ModelFamily* family_by_hf_type(const std::string& model_type) {
  for (const ModelFamily* f : model_families())
    if (model_type == f->hf.model_type) return f;
  return nullptr;
}

std::string model_arch_choices() { return enum_choices(kModelArchNames); }

}  // namespace trainer
