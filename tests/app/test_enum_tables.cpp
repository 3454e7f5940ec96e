// The project's enum name tables: each names every value once with a distinct name and
// round-trips; the recipe schema's choice keys list exactly their enum's table; the parsers'
// messages for an unknown name list the table's names; and the *_name functions read the
// tables (the spellings users see are pinned here).
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_export.h"
#include "app/engine/bad_steps.h"
#include "app/plan/flops.h"
#include "app/plan/plan_device.h"
#include "app/recipe/recipe.h"
#include "app/recipe/recipe_schema.h"
#include "data/tokenizer.h"
#include "kernels/backend.h"
#include "kernels/base/enum_names.h"
#include "kernels/base/errors.h"
#include "kernels/tensor.h"
#include "model/gpt_block.h"
#include "model/lr_schedule.h"
#include "model/optimizer_state.h"
#include "model/param_table.h"
#include "parallel/pipeline_schedule.h"
#include "tests/app/test_recipe_util.h"

namespace trainer::testing {
namespace {

// Distinct values, distinct non-empty names, each name back to its value, and the values
// 0 .. N-1 (so a table of N rows covers an enum of N values).
template <class E, size_t N>
void check_table(const EnumName<E> (&table)[N]) {
  std::set<int> values;
  std::set<std::string> names;
  for (const EnumName<E>& row : table) {
    CAPTURE(row.name);
    CHECK(!std::string(row.name).empty());
    CHECK(values.insert(int(row.value)).second);
    CHECK(names.insert(row.name).second);
    CHECK(enum_from_name(table, row.name) == row.value);
    CHECK(std::string(enum_name(table, row.value)) == row.name);
  }
  CHECK(*values.begin() == 0);
  CHECK(*values.rbegin() == int(N) - 1);
}

TEST_CASE("enum tables: every table is one-to-one and round-trips") {
  check_table(kDTypeNames);
  check_table(kDeviceNames);
  check_table(kDeviceChoiceNames);
  check_table(kPrecisionNames);
  check_table(kAttentionImplNames);
  check_table(kPrecisionChoiceNames);
  check_table(kRecomputeNames);
  check_table(kLrKindNames);
  check_table(kScheduleNames);
  check_table(kActionKindNames);
  check_table(kTokenizerKindNames);
  check_table(kOptimizerStateNames);
  check_table(kTpSplitNames);
  check_table(kPeakKindNames);
  check_table(kPlanDeviceNames);
  check_table(kExportFormatNames);
  check_table(kNonfiniteActionNames);
  check_table(kStepGraphsNames);
  check_table(kSpikeActionNames);
  check_table(kStepActionNames);
  check_table(kBadStepKindNames);
  check_table(kGradReduceDTypeNames);
}

// The schema row of a choice key.
const KeySpec& choice_key(const std::string& path) {
  const KeySpec* key = find_key(path);
  REQUIRE(key != nullptr);
  return *key;
}

template <class E, size_t N>
void check_schema_choices(const std::string& path, const EnumName<E> (&table)[N]) {
  CAPTURE(path);
  const KeySpec& key = choice_key(path);
  CHECK(key.choices == enum_names(table));
  REQUIRE(key.choice_values.size() == N);
  for (size_t i = 0; i < N; ++i) CHECK(key.choice_values[i] == uint8_t(table[i].value));
  CHECK(key_valid_text(key) == "one of: " + enum_choices(table));
}

TEST_CASE("enum tables: the schema's choice keys list their enum's table") {
  check_schema_choices("parallel.schedule", kScheduleNames);
  check_schema_choices("train.device", kDeviceChoiceNames);
  check_schema_choices("train.precision", kPrecisionChoiceNames);
  check_schema_choices("model.arch", kModelArchNames);
  check_schema_choices("train.recompute", kRecomputeNames);
  check_schema_choices("train.attention", kAttentionImplNames);
  check_schema_choices("train.attention_mask", kAttentionMaskNames);
  check_schema_choices("train.lr_schedule.kind", kLrKindNames);
  check_schema_choices("train.on_nonfinite", kNonfiniteActionNames);
  check_schema_choices("train.graphs", kStepGraphsNames);
  check_schema_choices("train.spike.action", kSpikeActionNames);
  check_schema_choices("parallel.grad_reduce_dtype", kGradReduceDTypeNames);
  int choice_keys = 0;
  for (const KeySpec& k : recipe_schema()) choice_keys += std::holds_alternative<ChoiceField>(k.field);
  CHECK(choice_keys == 12);  // every choice key is checked above (data.tokenizer is text: it also takes a path)
}

std::string config_error(void (*f)()) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  FAIL("no UserError");
  return "";
}

TEST_CASE("enum tables: an unknown name's message names it and lists the valid choices") {
  CHECK(config_error([] { parse_plan_device("tpu"); }) ==
        "--device: 'tpu' is not a device type plan knows; valid: a100, h100, h200, cpu");
  CHECK(config_error([] { parse_tokenizer_kind("gpt3", "here"); }) ==
        "here: unknown tokenizer 'gpt3' (valid: gpt2, byte)");
  CHECK(config_error([] { load_recipe_text("data: {train: x}\n", {"train.recompute=full"}); }) ==
        "--set train.recompute=full: train.recompute: unknown value \"full\"; valid: one of: none, "
        "gelu, block");
  CHECK(config_error([] { load_recipe_text("data: {train: x}\n", {"train.lr_schedule.kind=cosin"}); }) ==
        "--set train.lr_schedule.kind=cosin: train.lr_schedule.kind: unknown value \"cosin\" (did you "
        "mean cosine?); valid: one of: constant, linear, cosine, wsd");
}

TEST_CASE("enum tables: the names users see") {
  CHECK(std::string(schedule_name(Schedule::one_f_one_b)) == "1f1b");
  CHECK(std::string(recompute_name(Recompute::gelu)) == "gelu");
  CHECK(std::string(device_choice_name(DeviceChoice::auto_detect)) == "auto");
  CHECK(std::string(attention_impl_name(AttentionImpl::cudnn)) == "cudnn");
  CHECK(std::string(precision_name(Precision::bf16)) == "bf16");
  CHECK(std::string(dtype_name(DType::u16)) == "u16");
  CHECK(std::string(device_name(Device::cuda)) == "cuda");
  CHECK(std::string(tokenizer_kind_name(TokenizerKind::byte)) == "byte");
  CHECK(std::string(optimizer_state_name(OptimizerState::m)) == "adam_m");
  CHECK(std::string(tp_split_name(TpSplit::qkv_rows)) == "qkv_rows");
  CHECK(std::string(peak_kind_name(PeakKind::bf16_dense)) == "bf16 dense");
  CHECK(std::string(plan_device_name(PlanDevice::h200)) == "h200");
  CHECK(action_str({ActionKind::recv_grad, 3, 0}) == "recv_grad(3)");
  // Checkpoints write the states in this order.
  CHECK(kOptimizerStates.size() == 3);
  CHECK(kOptimizerStates[0] == OptimizerState::master);
  CHECK(kOptimizerStates[1] == OptimizerState::m);
  CHECK(kOptimizerStates[2] == OptimizerState::v);
}

}  // namespace
}  // namespace trainer::testing
