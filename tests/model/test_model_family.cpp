// The family descriptions (model/model_family.h): the registry finds each by its name and its
// config.json model_type, the width rule of the MLP's first product is the one place that knows
// swiglu's [gate | up], and a family's layer function builds exactly its table's layer rows,
// the ones the planner and the block counts read.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/block_code.h"
#include "model/param_table.h"
#include "tests/support/tiny_gpt.h"

using namespace trainer;

namespace {

GptConfig small(ModelArch arch) {
  GptConfig c = testing::gpt_config(3, 4, 16, 40, 48, 8);
  c.arch = arch;
  if (c.family().keys == ConfigKeys::llama) {
    c.n_kv_head = 2;
    c.ffn_dim = 24;
    c.qk_norm = QkNorm::on;
    c.tie = TiedEmbeddings::untied;
  }
  return c;
}

}  // namespace

TEST_CASE("model family: the registry holds one description per ModelArch, found by name and model_type") {
  const std::vector<const ModelFamily*> all = model_families();
  REQUIRE(all.size() == enum_values(kModelArchNames).size());
  for (const ModelFamily* f : all) {
    CAPTURE(f->name());
    CHECK(&family_of(f->arch) == f);
    CHECK(family_by_hf_type(f->hf.model_type) == f);
    CHECK(f->block != nullptr);
  }
  CHECK(family_by_hf_type("mistral") == nullptr);
  CHECK(model_arch_choices() == "gpt2, llama");
}

TEST_CASE("model family: the MLP's first product is [gate | up] for swiglu, the hidden width for gelu") {
  CHECK(gpt2_family().fc_width(96) == 96);
  CHECK(llama_family().fc_width(96) == 192);
  CHECK(small(gpt2_family().arch).mlp_dim() == 64);
  CHECK(small(llama_family().arch).mlp_dim() == 24);
}

TEST_CASE("model family: a family's layer rows are its table's, and the block counts sum them") {
  for (const ModelFamily* f : model_families()) {
    CAPTURE(f->name());
    const GptConfig c = small(f->arch);
    const std::vector<ParamSpec> table = param_table(c);
    for (int l = 0; l < c.n_layer; ++l) {
      std::vector<ParamSpec> layer;
      f->add_layer_params(c, l, layer);
      std::vector<std::string> want, got;
      int64_t numel = 0;
      for (const ParamSpec& s : table)
        if (s.unit == block_unit(c, l)) want.push_back(s.name);
      for (const ParamSpec& s : layer) {
        got.push_back(s.name);
        numel += s.numel();
      }
      CHECK(got == want);
      CHECK(numel == c.block_params());
    }
    // Tensor rank 2's share: the split matrices halve, the norms (and row-parallel biases) stay.
    const LayerParamsLocal local = layer_params_local(c, 2);
    CHECK(local.elements < c.block_params());
    CHECK(local.largest == int64_t(c.mlp_dim()) / 2 * c.d_model);
  }
}
