// StageLayout construction (see stage_layout.h).
#include "model/stage_layout.h"

#include <algorithm>

#include "kernels/base/check.h"
#include "parallel/shard.h"

namespace trainer {

std::vector<int> split_layers(int n_layer, int n_stages, const std::vector<int>& explicit_split) {
  if (!explicit_split.empty()) return explicit_split;
  std::vector<int> s(n_stages, n_layer / n_stages);
  for (int i = 0; i < n_layer % n_stages; ++i) s[i] += 1;
  return s;
}

StageLayout::StageLayout(const GptConfig& config, const LayoutOptions& options)
    : config_(config), options_(options), table_(param_table(config)) {
  const int v = options.dims.virtual_stages, pp = options.dims.pipeline;
  TRAINER_CHECK(v >= 1, "virtual stages");
  std::vector<int> layers = split_layers(config.n_layer, pp * v, options.stage_layers);
  TRAINER_CHECK(int(layers.size()) == pp * v, "stage split size");
  for (int c = 0; c < v; ++c) {
    const int vs = c * pp + options.at.pp;
    int first = 0;
    for (int s = 0; s < vs; ++s) first += layers[size_t(s)];
    chunk_first_global_.push_back(first);
    chunk_first_local_.push_back(n_layers_);
    chunk_layers_.push_back(layers[size_t(vs)]);
    n_layers_ += layers[size_t(vs)];
  }
  // The table's entries of each global unit, so that building a stage is linear in the table
  // (a scan per unit was quadratic in n_layer: minutes for a 100,000-layer plan).
  for (int i = 0; i < int(table_.size()); ++i) {
    const int u = table_[i].unit;
    if (u >= int(specs_of_unit_.size())) specs_of_unit_.resize(size_t(u) + 1);
    specs_of_unit_[size_t(u)].push_back(i);
  }

  if (has_embedding()) {
    unit_wte_ = int(units_.size());
    add_unit(unit_embedding(), CopyKind::primary);
    if (config.has_position_table()) {
      unit_wpe_ = int(units_.size());
      add_unit(unit_position(config), CopyKind::primary);
    }
  }
  unit_first_block_ = int(units_.size());
  for (int l = 0; l < n_layers_; ++l) add_unit(block_unit(config, global_layer(l)), CopyKind::primary);
  if (has_head()) {
    unit_lnf_ = int(units_.size());
    add_unit(unit_final_norm(config), CopyKind::primary);
    if (!config.tied()) {
      unit_head_wte_ = int(units_.size());
      add_unit(unit_lm_head(config), CopyKind::primary);
    } else if (has_embedding()) {
      unit_head_wte_ = unit_wte_;
    } else {
      unit_head_wte_ = int(units_.size());
      add_unit(unit_embedding(), CopyKind::tied_copy);
    }
  }
}

void StageLayout::add_unit(int global_unit, CopyKind copy) {
  LocalUnit u;
  u.global_unit = global_unit;
  u.name = unit_name(config_, global_unit) + (copy == CopyKind::tied_copy ? " (tied copy)" : "");
  u.offset = total_;
  const int local_unit = int(units_.size());
  const std::vector<int> none;
  for (int i : global_unit < int(specs_of_unit_.size()) ? specs_of_unit_[size_t(global_unit)] : none) {
    const ParamSpec& spec = table_[i];
    LocalParam p;
    p.spec = i;
    p.shape = tp_local_shape(spec, dims().tensor);
    p.numel = 1;
    for (int64_t s : p.shape) p.numel *= s;
    p.unit = local_unit;
    p.offset = u.offset + u.numel;
    p.runs = tp_runs(spec, coords().tp, dims().tensor);
    p.copy = copy;
    bool tp_replica = spec.split == TpSplit::none && coords().tp != 0;
    p.counts_in_norm = copy == CopyKind::primary && !tp_replica;
    u.numel += p.numel;
    u.params.push_back(int(params_.size()));
    params_.push_back(std::move(p));
  }
  u.padded = unit_padded(u.numel, dims().data);
  u.shard = shard_range(u.padded, dims().data, coords().dp);
  u.shard_offset = shard_total_;
  shard_total_ += u.shard.size();
  total_ += u.padded;
  units_.push_back(std::move(u));
}

int StageLayout::global_layer(int local_layer) const {
  TRAINER_CHECK(local_layer >= 0 && local_layer < n_layers_, "local layer " + std::to_string(local_layer));
  int c = n_chunks() - 1;
  while (chunk_first_local_[size_t(c)] > local_layer) --c;
  return chunk_first_global_[size_t(c)] + local_layer - chunk_first_local_[size_t(c)];
}

int64_t StageLayout::max_unit_padded() const {
  int64_t m = 0;
  for (const auto& u : units_) m = std::max(m, u.padded);
  return m;
}

Range StageLayout::owned_slice(const LocalParam& p) const {
  const LocalUnit& u = units_[p.unit];
  Range pr{p.offset - u.offset, p.offset - u.offset + p.numel};
  Range piece = intersect(pr, u.shard);
  return {piece.begin - pr.begin, piece.end - pr.begin};
}

const LocalParam& StageLayout::find(int unit, const std::string& name) const {
  TRAINER_CHECK(unit >= 0 && unit < int(units_.size()), "unit index " + std::to_string(unit));
  for (int i : units_[unit].params)
    if (table_[params_[i].spec].name == name) return params_[i];
  TRAINER_CHECK(false, "parameter " + name + " not in unit " + units_[unit].name);
  return params_[0];
}

}  // namespace trainer
