// The parameter table: the single source of truth for every parameter's global name (Hugging
// Face's naming of each family, from its description: model_family.h), global shape (nn.Linear
// layout (out, in), as llm.c), how tensor parallelism splits it, which unit it belongs to,
// whether weight decay applies and how it is initialised. Allocation, init, sharding,
// checkpoints and export are all derived from it.
//
// Units (contiguous in every rank's flat buffers, in forward order; ZeRO-3 gathers one at a
// time): 0 = the token table, 1 = the position table (a learned one only), then one per block,
// the final norm and, untied only, the output head:
//   gpt2:  0 = wte, 1 = wpe, 2 + l = block l, n_layer + 2 = ln_f
//   llama: 0 = model.embed_tokens, 1 + l = layer l, n_layer + 1 = model.norm,
//          n_layer + 2 = lm_head (untied only)
// Within a llama layer q_proj, k_proj, v_proj follow each other, and so do gate_proj and
// up_proj: every rank's slices of them are adjacent in its buffers, so the model runs each
// group as one matrix (the fused QKV and gate/up products).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend_init_ops.h"
#include "kernels/base/enum_names.h"
#include "kernels/base/range.h"
#include "model/gpt_config.h"

namespace trainer {

// How a tensor is split across the tensor-parallel group.
enum class TpSplit : uint8_t {
  none,      // replicated (LayerNorms, position table, biases of row-parallel layers)
  rows,      // dim 0 split: column-parallel weights/biases and the vocabulary-parallel table
  cols,      // dim 1 split: row-parallel weights
  qkv_rows,  // dim 0 is [q; k; v], each third split by rows (heads)
};
// The names checkpoint manifests store splits under.
inline constexpr EnumName<TpSplit> kTpSplitNames[] = {
    {TpSplit::none, "none"}, {TpSplit::rows, "rows"}, {TpSplit::cols, "cols"}, {TpSplit::qkv_rows, "qkv_rows"}};
inline const char* tp_split_name(TpSplit split) { return enum_name(kTpSplitNames, split); }

// The gradient of a replicated parameter on each tensor rank: whole (every rank sees every row
// and head, so all agree), or per_head (each rank sees only its own heads: qk_norm's weights),
// to be summed over the tensor group.
enum class TpGrad : uint8_t { whole, per_head };

enum class WeightDecay : uint8_t { off, on };
enum class InitKind : uint8_t { normal, normal_residual, normal_vocab, ones, zeros };

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;  // global
  TpSplit split = TpSplit::none;
  int unit = 0;
  WeightDecay decay = WeightDecay::off;
  InitKind init = InitKind::zeros;
  TpGrad tp_grad = TpGrad::whole;

  int64_t numel() const;
};

// Appends one row (TpGrad::whole) to a table.
void add_param(std::vector<ParamSpec>& table, std::string name, std::vector<int64_t> shape, TpSplit split, int unit,
               WeightDecay decay, InitKind init);
// The config's family's table (ModelFamily::param_table).
std::vector<ParamSpec> param_table(const GptConfig& config);
// The families' tables and their layers (gpt2_param_table.cpp, llama_param_table.cpp).
std::vector<ParamSpec> gpt2_param_table(const GptConfig& config);
void add_gpt2_layer_params(const GptConfig& config, int layer, std::vector<ParamSpec>& table);
std::vector<ParamSpec> llama_param_table(const GptConfig& config);
void add_llama_layer_params(const GptConfig& config, int layer, std::vector<ParamSpec>& table);

// The global units (see above); -1 where the family or the tying has none.
int unit_count(const GptConfig& config);
inline int unit_embedding() { return 0; }
inline int unit_position(const GptConfig& c) { return c.has_position_table() ? 1 : -1; }
inline int block_unit(const GptConfig& c, int layer) { return (c.has_position_table() ? 2 : 1) + layer; }
inline int unit_final_norm(const GptConfig& c) { return block_unit(c, c.n_layer); }
inline int unit_lm_head(const GptConfig& c) { return c.tied() ? -1 : unit_final_norm(c) + 1; }
// Printable unit names: "wte", "wpe", "h.3", "ln_f"; "embed_tokens", "layers.3", "norm", "lm_head".
std::string unit_name(const GptConfig& config, int unit);

// Global names of the tables the stages address directly.
const char* embedding_name(const GptConfig& c);  // the token table
const char* head_name(const GptConfig& c);       // the output head's weight (the token table when tied)
const char* final_norm_weight_name(const GptConfig& c);
const char* final_norm_bias_name(const GptConfig& c);  // nullptr where the family has none
// The prefix of layer l's names: "h.3." or "model.layers.3.".
std::string layer_prefix(const GptConfig& c, int layer);

// One layer's parameters on each rank of a tensor group of tp: their elements and the largest
// parameter's (the planner's closed forms read the family's table through this).
struct LayerParamsLocal {
  int64_t elements = 0, largest = 0;
};
LayerParamsLocal layer_params_local(const GptConfig& config, int tp);

// The global flat index ranges (row-major over the global shape) that tensor-parallel rank
// tp_rank of tp holds, in the order of its local elements.
std::vector<Range> tp_runs(const ParamSpec& spec, int tp_rank, int tp);
std::vector<int64_t> tp_local_shape(const ParamSpec& spec, int tp);

// How a parameter's initial values are drawn: for the normal kinds, the stream whose element
// i is the parameter's global element i (first = 0; a caller filling a range sets first), so
// every layout and every backend (Backend::init_normal) starts from the same weights; nullopt
// for the constant kinds, whose value is init_constant.
std::optional<NormalFill> init_normal_fill(const GptConfig& config, const ParamSpec& spec, uint64_t seed);
float init_constant(const ParamSpec& spec);
// Initial value of global element `index` of a parameter: a pure function of
// (seed, name, index).
float init_value(const GptConfig& config, const ParamSpec& spec, uint64_t seed, int64_t index);
// init_value of the global elements [begin, begin + n) into out, over OpenMP threads.
void init_values(const GptConfig& config, const ParamSpec& spec, uint64_t seed, int64_t begin, int64_t n, float* out);

}  // namespace trainer
