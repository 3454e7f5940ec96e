// The parameter table: the single source of truth for every parameter's global name (HF
// GPT-2 naming), global shape (nn.Linear layout (out, in), as llm.c), how tensor parallelism
// splits it, which unit it belongs to, whether weight decay applies and how it is
// initialised. Allocation, init, sharding, checkpoints and export are all derived from it.
//
// Units (contiguous in every rank's flat buffers; ZeRO-3 gathers one at a time):
//   unit 0 = wte, unit 1 = wpe, unit 2 + l = block l, unit n_layer + 2 = ln_f.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

enum class WeightDecay : uint8_t { off, on };
enum class InitKind : uint8_t { normal, normal_residual, normal_vocab, ones, zeros };

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;  // global
  TpSplit split = TpSplit::none;
  int unit = 0;
  WeightDecay decay = WeightDecay::off;
  InitKind init = InitKind::zeros;

  int64_t numel() const;
};

std::vector<ParamSpec> gpt2_param_table(const GptConfig& config);
int unit_count(const GptConfig& config);
// Unit of a block (2 + layer) and its printable name ("wte", "wpe", "h.3", "ln_f").
inline int block_unit(int layer) { return 2 + layer; }
std::string unit_name(const GptConfig& config, int unit);

// The global flat index ranges (row-major over the global shape) that tensor-parallel rank
// tp_rank of tp holds, in the order of its local elements.
std::vector<Range> tp_runs(const ParamSpec& spec, int tp_rank, int tp);
std::vector<int64_t> tp_local_shape(const ParamSpec& spec, int tp);

// Initial value of global element `index` of a parameter: a pure function of
// (seed, name, index), so every layout starts from the same weights.
float init_value(const GptConfig& config, const ParamSpec& spec, uint64_t seed, int64_t index);
// init_value of the global elements [begin, begin + n) into out, over OpenMP threads.
void init_values(const GptConfig& config, const ParamSpec& spec, uint64_t seed, int64_t begin, int64_t n, float* out);

}  // namespace trainer
