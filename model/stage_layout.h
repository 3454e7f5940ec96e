// StageLayout: which parameters this rank holds (its pipeline stage, its tensor-parallel
// slice), where each lives in the rank's flat buffers, and how units are sharded over the
// data group (ZeRO).
//
// Invariants:
// - Units are laid out in forward order, each contiguous and padded with zeros to a multiple
//   of 8 x the data degree (unit_padded, parallel/shard.h), so every unit splits into `dp`
//   equal shards and every unit and shard starts 16-byte aligned; shard storage (optimizer
//   state, and for ZeRO-2/3 gradients, for ZeRO-3 parameters) is the concatenation over units
//   of this rank's shard.
// - With virtual stages (v > 1) the layers split into v * pp virtual stages and this rank holds
//   chunks c = 0 .. v-1, chunk c being virtual stage c * pp + pp_rank; its local layers are
//   the chunks' layers in chunk order, so a chunk's layers (and units) are contiguous.
// - Stage 0 holds the token table (and gpt2's position table), the last stage the final norm
//   and the head: an untied head is its own unit; a tied one is the token table itself on a
//   single stage, and with a pipeline a tied copy of it (its own unit, so both copies
//   shard identically).
// - A parameter counts in the global gradient norm on exactly one rank of every group that
//   holds identical copies: tensor-replicated parameters on tp_rank 0, the tied wte on stage 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/param_table.h"
#include "parallel/parallel_dims.h"

namespace trainer {

enum class CopyKind : uint8_t { primary, tied_copy };

struct LocalParam {
  int spec = 0;                  // index into the parameter table
  std::vector<int64_t> shape;    // local (tensor-parallel slice)
  int64_t numel = 0;
  int unit = 0;                  // local unit index
  int64_t offset = 0;            // absolute offset in the flat buffer
  std::vector<Range> runs;       // global flat ranges held, in local element order
  CopyKind copy = CopyKind::primary;
  bool counts_in_norm = true;
};

struct LocalUnit {
  int global_unit = 0;
  std::string name;
  int64_t offset = 0;   // in the flat buffer
  int64_t numel = 0;    // parameters without padding
  int64_t padded = 0;   // unit_padded(numel, dp): a multiple of 8 dp
  std::vector<int> params;
  Range shard;          // this rank's shard, relative to the unit start
  int64_t shard_offset = 0;  // where that shard starts in shard storage
};

struct LayoutOptions {
  ParallelDims dims;              // virtual_stages: chunks per pipeline rank (1 without a pipeline)
  GridCoords at;                  // this rank's place in the grid
  std::vector<int> stage_layers;  // layers per virtual stage (dims.n_stages()); empty = even split
};

// Layers per (virtual) stage: the explicit split, or as even as possible (earlier stages take
// the remainder).
std::vector<int> split_layers(int n_layer, int n_stages, const std::vector<int>& explicit_split);

class StageLayout {
 public:
  StageLayout(const GptConfig& config, const LayoutOptions& options);

  const GptConfig& config() const { return config_; }
  const LayoutOptions& options() const { return options_; }
  const ParallelDims& dims() const { return options_.dims; }
  const GridCoords& coords() const { return options_.at; }
  const std::vector<ParamSpec>& table() const { return table_; }
  const std::vector<LocalUnit>& units() const { return units_; }
  const std::vector<LocalParam>& params() const { return params_; }
  const ParamSpec& spec(const LocalParam& p) const { return table_[p.spec]; }

  // Local layers over all chunks; chunk c's are chunk_first_local(c) .. + chunk_layers(c) - 1.
  int n_layers() const { return n_layers_; }
  int n_chunks() const { return options_.dims.virtual_stages; }
  int chunk_first_local(int chunk) const { return chunk_first_local_[size_t(chunk)]; }
  int chunk_layers(int chunk) const { return chunk_layers_[size_t(chunk)]; }
  // The model's index of a local layer.
  int global_layer(int local_layer) const;
  bool has_embedding() const { return dims().first_stage(coords().pp); }
  bool has_head() const { return dims().last_stage(coords().pp); }
  // Local unit indices; -1 when this stage does not hold it (wpe: also for llama). head_wte
  // is the unit whose table the output head uses: the untied head, or the token table (the
  // primary on a single stage, the tied copy otherwise); its parameter is head_name(config).
  int unit_wte() const { return unit_wte_; }
  int unit_wpe() const { return unit_wpe_; }
  int unit_block(int local_layer) const { return unit_first_block_ + local_layer; }
  int unit_lnf() const { return unit_lnf_; }
  int unit_head_wte() const { return unit_head_wte_; }

  int64_t total() const { return total_; }
  int64_t shard_total() const { return shard_total_; }
  int64_t max_unit_padded() const;
  // The part of a parameter's local slice that this rank owns among its data group (its ZeRO
  // shard, whatever the stage): every element of the group's copies is owned by exactly one
  // rank. Relative to the local slice.
  Range owned_slice(const LocalParam& param) const;
  // The local parameter with this global name in unit u (throws if absent).
  const LocalParam& find(int unit, const std::string& name) const;

 private:
  void add_unit(int global_unit, CopyKind copy);

  GptConfig config_;
  LayoutOptions options_;
  std::vector<ParamSpec> table_;
  std::vector<std::vector<int>> specs_of_unit_;  // global unit -> its indices in table_, in order
  std::vector<LocalUnit> units_;
  std::vector<LocalParam> params_;
  std::vector<int> chunk_first_global_, chunk_first_local_, chunk_layers_;
  int n_layers_ = 0;
  int unit_wte_ = -1, unit_wpe_ = -1, unit_first_block_ = -1, unit_lnf_ = -1, unit_head_wte_ = -1;
  int64_t total_ = 0, shard_total_ = 0;
};

}  // namespace trainer
